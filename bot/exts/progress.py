"""/profile (an image card plus text) and /leaderboard (XP pages with buttons, or one task's
speed board)."""

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
from bot.content import AnyTask, TaskRef
from bot.curriculum.task_choices import speed_boards
from bot.exts.common import MAX_CHOICES, UserFacingError, bot_of, display_name, guild_id_of
from bot.exts.error_replies import AnswersErrors
from bot.presentation.board_embeds import leaderboard_embed, profile_text
from bot.presentation.images import profile_card
from bot.presentation.limits import truncate
from bot.presentation.page_links import PageLinks, page_links
from bot.presentation.speed_board_embeds import PICK_A_TASK, no_speed_results, speed_board_embed
from bot.progress.leaderboard import PAGE_SIZE, Page, leaderboard
from bot.progress.members import ensure_member, find_member_id
from bot.progress.profile import profile
from bot.progress.speed_results import is_speed_ranked, speed_board, speed_task_refs
from bot.progress.totals import Board

PERIOD_LABELS: dict[str, str] = {"week": "this week", "month": "this month", "all": "all time"}
PREVIOUS = "◀ Previous"
NEXT = "Next ▶"


class Progress(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot

    async def _server(self, guild_id: int) -> tuple[ZoneInfo, PageLinks | None]:
        """The server's time zone, and its public pages' links (None: no page to link to)."""
        guild = await self.bot.services.guild(guild_id)
        tz = ZoneInfo(guild.timezone if guild else "UTC")
        return tz, page_links(self.bot.services.settings, guild)

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
        refs_by_quest = {
            q.id: [str(TaskRef(q.id, t.id)) for t in q.tasks] for q in guild_map.quests
        }
        tz, links = await self._server(guild_id)  # before the transaction: one session at a time
        async with self.bot.services.sessions() as session, session.begin():
            row = await ensure_member(session, guild_id, who.id, display_name(who))
            # the public page answers only while the member is listed: never link to a 404
            listed = not row.hidden and row.anonymised_at is None
            numbers = await profile(
                session,
                guild_id=guild_id,
                member_id=row.id,
                tz=tz,
                now=clock.now(),
                content_task_refs_by_quest=refs_by_quest,
            )
        name = display_name(who)
        page_url = links.member(who.id) if links is not None and listed else None
        card = await asyncio.to_thread(profile_card, numbers, name)
        await interaction.edit_original_response(
            content=profile_text(numbers, name, page_url=page_url),
            attachments=[discord.File(io.BytesIO(card), filename="profile.png")],
        )

    @app_commands.command(name="leaderboard", description="The server's top learners")
    @app_commands.describe(
        period="week, month or all time (default: week); XP board only",
        board="xp (default), or speed: the fastest solutions of one task",
        task="the task whose speed board to show (with board:speed)",
    )
    @app_commands.guild_only()
    async def leaderboard(
        self,
        interaction: discord.Interaction,
        period: Literal["week", "month", "all"] = "week",
        board: Literal["xp", "speed"] = "xp",
        task: str | None = None,
    ) -> None:
        if board == "speed" and not (task and task.strip()):
            await interaction.response.send_message(PICK_A_TASK, ephemeral=True)
            return
        await interaction.response.defer(thinking=True)  # acknowledge before any database work
        if board == "speed" and task:
            await self.speed_board(interaction, task.strip())
            return
        embed, view = await self.board_page(interaction, period, 1)
        await interaction.edit_original_response(embed=embed, view=view)

    @leaderboard.autocomplete("task")
    async def speed_task_choices(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        """Speed-ranked tasks of the map, in map order, then any other task with results."""
        if interaction.guild_id is None:
            return []
        guild_map = await self.bot.services.guild_map(interaction.guild_id)
        with_results = await self.bot.services.read(speed_task_refs, interaction.guild_id)
        needle = current.casefold().strip()
        choices = []
        for ref, title in speed_boards(guild_map, with_results):
            title = title or ""
            if len(ref) <= 100 and (needle in ref.casefold() or needle in title.casefold()):
                label = f"{ref} · {title}" if title else ref
                choices.append(app_commands.Choice(name=truncate(label, 100), value=ref))
        return choices[:MAX_CHOICES]

    async def speed_board(self, interaction: discord.Interaction, task_ref: str) -> None:
        """Answer a deferred ``/leaderboard board:speed task:...``: the board, or why there is
        none."""
        guild_id = guild_id_of(interaction)
        guild_map = await self.bot.services.guild_map(guild_id)
        try:
            task: AnyTask | None = guild_map.find_task(task_ref)[1]
        except KeyError:
            task = None
        result = await self.bot.services.read(speed_board, guild_id=guild_id, task_ref=task_ref)
        title = task.title if task is not None else None
        if not result.empty:
            links = page_links(self.bot.services.settings, await self.bot.services.guild(guild_id))
            url = links.speed_board(result.task_ref) if links is not None else None
            embed = speed_board_embed(result, title=title, url=url)
            await interaction.edit_original_response(embed=embed)
        elif task is not None and is_speed_ranked(task):
            content = no_speed_results(title, task_ref, retired=result.retired)
            await interaction.edit_original_response(content=content)
        elif task is not None:
            raise UserFacingError(
                f"`{truncate(task_ref, 100)}` is not speed-ranked: its verdicts time nothing, "
                "so it has no speed board. Pick a task from the list as you type."
            )
        else:
            raise UserFacingError(
                f"There is no task `{truncate(task_ref, 100)}` with a speed board in this "
                "server. Pick one from the list as you type."
            )

    async def board_page(
        self, interaction: discord.Interaction, period: Board, number: int
    ) -> tuple[discord.Embed, discord.ui.View]:
        """Page ``number`` of the board as it is now, with the place of whoever asked (the
        member who ran the command, or who clicked a page button)."""
        guild_id = guild_id_of(interaction)
        tz, links = await self._server(guild_id)
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
        # the web page that shows this page's first row (a web page holds more rows)
        first = (page.page - 1) * PAGE_SIZE + 1
        url = links.board_holding(period, first) if links is not None else None
        embed = leaderboard_embed(
            page,
            period_label=PERIOD_LABELS[period],
            caller_name=display_name(interaction.user),
            url=url,
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
        await interaction.response.defer()  # before the board is read
        embed, view = await cog.board_page(interaction, self.period, self.page)
        await interaction.edit_original_response(embed=embed, view=view)


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
