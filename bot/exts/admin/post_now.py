"""/admin post-quest and /admin post-leaderboard: the scheduled posts, now."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

import discord
from discord import app_commands

from bot import clock
from bot.exts.admin.shared import AdminBase
from bot.exts.common import UserFacingError, find_quest, quest_autocomplete
from bot.exts.schedule import posting
from bot.posting.post_transport import PostFailed
from bot.posting.posts import Posted, previous_week
from bot.presentation.limits import truncate
from bot.progress.periods import week_of


class PostCommands(AdminBase):
    @app_commands.command(name="post-quest", description="Post today's (or a) quest now")
    @app_commands.describe(quest="the quest (default: today's)")
    @app_commands.autocomplete(quest=quest_autocomplete)
    async def post_quest(self, interaction: discord.Interaction, quest: str | None = None) -> None:
        guild = await self._configured(interaction)
        chosen = None
        if quest:
            chosen = find_quest(await self.bot.services.guild_map(guild.id), quest)
        try:
            posted = await posting(self.bot).post_daily(guild, chosen)
        except PostFailed as exc:
            raise UserFacingError(str(exc)) from None
        await self._done_and_audited(
            interaction,
            f"Posted: {_jump_url(guild.id, posted)}",
            "post-quest",
            f"message:{posted.message_id}",
            quest=quest,
        )

    @app_commands.command(name="post-leaderboard", description="Post the weekly leaderboard now")
    @app_commands.describe(week="ISO week like 2026-W48 (default: last week)")
    async def post_leaderboard(
        self, interaction: discord.Interaction, week: str | None = None
    ) -> None:
        guild = await self._configured(interaction)
        tz = ZoneInfo(guild.timezone)
        period = previous_week(guild, clock.now())
        if week:
            try:
                year, number = week.strip().upper().split("-W")
                monday = date.fromisocalendar(int(year), int(number), 1)
            except ValueError:
                raise UserFacingError(
                    f"`{truncate(week, 20)}` is not a week like 2026-W48."
                ) from None
            period = week_of(monday, tz)
        try:
            posted = await posting(self.bot).post_weekly(guild, period)
        except PostFailed as exc:
            raise UserFacingError(str(exc)) from None
        await self._done_and_audited(
            interaction,
            f"Posted week {period.key}: {_jump_url(guild.id, posted)}",
            "post-leaderboard",
            f"week:{period.key}",
        )


def _jump_url(guild_id: int, posted: Posted) -> str:
    """The link Discord shows a message at (``discord.Message.jump_url``)."""
    return f"https://discord.com/channels/{guild_id}/{posted.channel_id}/{posted.message_id}"
