"""/profile (an image card plus text) and /leaderboard (pages with buttons)."""

from __future__ import annotations

import asyncio
import io
import re
from typing import Any, Literal, Self, cast
from zoneinfo import ZoneInfo

import discord
from discord import app_commands
from discord.ext import commands

from bot import clock
from bot.app import BrrrBot
from bot.exts.common import bot_of, display_name, guild_id_of
from bot.exts.errors import AnswersErrors
from bot.presentation.boards import leaderboard_embed, profile_text
from bot.presentation.images import profile_card
from bot.progress.leaderboard import Page, leaderboard
from bot.progress.members import ensure_member, find_member_id
from bot.progress.profile import profile
from bot.progress.totals import Board

PERIOD_LABELS: dict[str, str] = {"week": "this week", "month": "this month", "all": "all time"}
PREVIOUS = "◀ Previous"
NEXT = "Next ▶"


class Progress(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot

    async def _tz(self, guild_id: int) -> ZoneInfo:
        guild = await self.bot.services.guild(guild_id)
        return ZoneInfo(guild.timezone if guild else "UTC")

    @app_commands.command(name="profile", description="XP, level, rank and streaks")
    @app_commands.describe(member="whose profile (default: yours)")
    @app_commands.guild_only()
    async def profile(
        self, interaction: discord.Interaction, member: discord.Member | None = None
    ) -> None:
        await interaction.response.defer(thinking=True)
        guild_id = guild_id_of(interaction)
        who = member or interaction.user
        guild_map = await self.bot.services.guild_map(guild_id)
        refs_by_quest = {q.id: [f"{q.id}/{t.id}" for t in q.tasks] for q in guild_map.quests}
        tz = await self._tz(guild_id)  # before the transaction: one session at a time
        async with self.bot.services.sessions() as session, session.begin():
            row = await ensure_member(session, guild_id, who.id, display_name(who))
            numbers = await profile(
                session,
                guild_id=guild_id,
                member_id=row.id,
                tz=tz,
                now=clock.now(),
                content_task_refs_by_quest=refs_by_quest,
            )
        name = display_name(who)
        card = await asyncio.to_thread(profile_card, numbers, name)
        await interaction.edit_original_response(
            content=profile_text(numbers, name),
            attachments=[discord.File(io.BytesIO(card), filename="profile.png")],
        )

    @app_commands.command(name="leaderboard", description="The server's top learners")
    @app_commands.describe(period="week, month or all time (default: week)")
    @app_commands.guild_only()
    async def leaderboard(
        self,
        interaction: discord.Interaction,
        period: Literal["week", "month", "all"] = "week",
    ) -> None:
        await interaction.response.defer(thinking=True)  # acknowledge before any database work
        embed, view = await self.board_page(interaction, period, 1)
        await interaction.edit_original_response(embed=embed, view=view)

    async def board_page(
        self, interaction: discord.Interaction, period: Board, number: int
    ) -> tuple[discord.Embed, discord.ui.View]:
        """Page ``number`` of the board as it is now, with the place of whoever asked (the
        member who ran the command, or who clicked a page button)."""
        guild_id = guild_id_of(interaction)
        tz = await self._tz(guild_id)
        member_id = await self.bot.services.read(find_member_id, guild_id, interaction.user.id)
        page = await self.bot.services.read(
            leaderboard,
            guild_id=guild_id,
            period=period,
            page=number,
            tz=tz,
            now=clock.now(),
            caller_member_id=member_id,
        )
        embed = leaderboard_embed(
            page, period_label=PERIOD_LABELS[period], caller_name=display_name(interaction.user)
        )
        return embed, page_buttons(page)


class PageButton(
    AnswersErrors,
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]],
    template=r"brrr:lb:(?P<period>week|month|all):(?P<page>[0-9]{1,9})",
):
    """Previous or next under a leaderboard.  The board and the target page are the whole
    state, in the custom id, so a click works after a restart; each click re-reads the board.
    Anyone may turn the pages of the public board."""

    def __init__(self, period: Board, page: int, label: str, *, disabled: bool = False) -> None:
        super().__init__(
            discord.ui.Button(
                label=label,
                style=discord.ButtonStyle.secondary,
                custom_id=f"brrr:lb:{period}:{page}",
                disabled=disabled,
            )
        )
        self.period = period
        self.page = page

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> Self:
        label = getattr(item, "label", None) or ""
        return cls(cast(Board, match["period"]), int(match["page"]), label)

    async def clicked(self, interaction: discord.Interaction) -> None:
        cog = bot_of(interaction).get_cog("Progress")
        assert isinstance(cog, Progress)
        embed, view = await cog.board_page(interaction, self.period, self.page)
        await interaction.response.edit_message(embed=embed, view=view)


def page_buttons(page: Page) -> discord.ui.View:
    """Previous/next for ``page``, disabled at the ends.  No timeout: the buttons hold no state,
    and a view that times out unregisters its dynamic items."""
    view = discord.ui.View(timeout=None)
    view.add_item(PageButton(page.period, page.page - 1, PREVIOUS, disabled=page.page <= 1))
    view.add_item(PageButton(page.period, page.page + 1, NEXT, disabled=page.page >= page.pages))
    return view


async def setup(bot: BrrrBot) -> None:
    bot.add_dynamic_items(PageButton)
    await bot.add_cog(Progress(bot))


async def teardown(bot: BrrrBot) -> None:
    bot.remove_dynamic_items(PageButton)
