"""/profile (an image card plus text) and /leaderboard (pages with buttons)."""

from __future__ import annotations

import asyncio
import io
from typing import Literal
from zoneinfo import ZoneInfo

import discord
from discord import app_commands
from discord.ext import commands

from bot import clock
from bot.app import BrrrBot
from bot.exts.common import display_name, guild_id_of
from bot.presentation.boards import leaderboard_embed, profile_text
from bot.presentation.images import profile_card
from bot.progress.leaderboard import Page, leaderboard
from bot.progress.members import ensure_member, find_member_id
from bot.progress.profile import profile
from bot.progress.totals import Board

PERIOD_LABELS: dict[str, str] = {"week": "this week", "month": "this month", "all": "all time"}
PAGE_VIEW_TIMEOUT_S = 10 * 60


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
        guild_id = guild_id_of(interaction)
        await interaction.response.defer(thinking=True)  # acknowledge before any database work
        async with self.bot.services.reads() as session:
            member_id = await find_member_id(session, guild_id, interaction.user.id)
        view = LeaderboardView(self, guild_id, period, member_id, display_name(interaction.user))
        page = await view.load(1)
        await interaction.edit_original_response(embed=view.render(page), view=view.sync(page))

    async def page(
        self, guild_id: int, period: Board, number: int, caller_member_id: int | None
    ) -> Page:
        tz = await self._tz(guild_id)
        async with self.bot.services.reads() as session:
            return await leaderboard(
                session,
                guild_id=guild_id,
                period=period,
                page=number,
                tz=tz,
                now=clock.now(),
                caller_member_id=caller_member_id,
            )


class LeaderboardView(discord.ui.View):
    """Previous/next buttons; each click re-reads the board, so pages are always current."""

    def __init__(
        self, cog: Progress, guild_id: int, period: Board, member_id: int | None, caller: str
    ) -> None:
        super().__init__(timeout=PAGE_VIEW_TIMEOUT_S)
        self.cog = cog
        self.guild_id = guild_id
        self.period = period
        self.member_id = member_id
        self.caller = caller
        self.current = 1

    async def load(self, number: int) -> Page:
        page = await self.cog.page(self.guild_id, self.period, number, self.member_id)
        self.current = page.page
        return page

    def render(self, page: Page) -> discord.Embed:
        return leaderboard_embed(
            page, period_label=PERIOD_LABELS[self.period], caller_name=self.caller
        )

    def sync(self, page: Page) -> LeaderboardView:
        self.previous.disabled = page.page <= 1
        self.next.disabled = page.page >= page.pages
        return self

    async def _turn(self, interaction: discord.Interaction, step: int) -> None:
        page = await self.load(self.current + step)
        await interaction.response.edit_message(embed=self.render(page), view=self.sync(page))

    @discord.ui.button(label="◀ Previous", style=discord.ButtonStyle.secondary)
    async def previous(self, interaction: discord.Interaction, _: discord.ui.Button) -> None:
        await self._turn(interaction, -1)

    @discord.ui.button(label="Next ▶", style=discord.ButtonStyle.secondary)
    async def next(self, interaction: discord.Interaction, _: discord.ui.Button) -> None:
        await self._turn(interaction, +1)


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Progress(bot))
