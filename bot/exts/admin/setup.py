"""/admin setup: where and when the posts go, who moderates, champion role, discussion threads,
public web pages."""

from __future__ import annotations

from typing import Literal
from zoneinfo import available_timezones

import discord
from discord import app_commands

from bot import clock, guilds
from bot.config import Settings
from bot.db.models import Guild
from bot.exts.admin.role_checks import unmanageable_role
from bot.exts.admin.shared import AdminBase, reply
from bot.exts.common import UserFacingError, guild_id_of
from bot.presentation.page_links import missing_settings, page_links
from bot.progress.post_times import parse_post_time

Weekday = Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


async def timezone_autocomplete(
    interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    needle = current.casefold().replace(" ", "_")
    names = sorted(name for name in available_timezones() if needle in name.casefold())
    return [app_commands.Choice(name=name, value=name) for name in names[:25]]


def _missing_in(channel: discord.TextChannel, *, threads: bool) -> list[str]:
    """The permissions the bot lacks in the quest channel, in Discord's words."""
    perms = channel.permissions_for(channel.guild.me)
    needed = [
        ("View Channel", perms.view_channel),
        ("Send Messages", perms.send_messages),
        ("Embed Links", perms.embed_links),
        ("Attach Files", perms.attach_files),
    ]
    if threads:
        needed += [
            ("Create Public Threads", perms.create_public_threads),
            ("Send Messages in Threads", perms.send_messages_in_threads),
        ]
    return [name for name, ok in needed if not ok]


class SetupCommands(AdminBase):
    @app_commands.command(name="setup", description="Where and when the daily quest is posted")
    @app_commands.describe(
        channel="the quest channel (needed the first time)",
        time="local post time, HH:MM (default 09:00)",
        timezone="IANA time zone, e.g. Europe/Berlin (default UTC)",
        weekly_day="day of the weekly leaderboard post (default Monday)",
        moderator_role="members with this role may use /admin too",
        champion_role="given to the week's first place when the weekly leaderboard is posted",
        threads="open a discussion thread under each daily post",
        web="publish this server's boards, map and member pages on the web",
    )
    @app_commands.rename(champion_role="champion-role")
    @app_commands.autocomplete(timezone=timezone_autocomplete)
    async def setup_(
        self,
        interaction: discord.Interaction,
        channel: discord.TextChannel | None = None,
        time: str | None = None,
        timezone: str | None = None,
        weekly_day: Weekday | None = None,
        moderator_role: discord.Role | None = None,
        champion_role: discord.Role | None = None,
        threads: bool | None = None,
        web: bool | None = None,
    ) -> None:
        guild_id = guild_id_of(interaction)
        current = await self.bot.services.guild(guild_id)
        try:
            if time is not None:
                parse_post_time(time)
            tz = guilds.parse_timezone(timezone or (current.timezone if current else "UTC"))
        except ValueError as exc:
            raise UserFacingError(str(exc)) from None
        target = channel or self._channel(interaction, current)
        wants_threads = (
            threads if threads is not None else bool(current and current.discussion_threads)
        )
        if target is not None:
            missing = _missing_in(target, threads=wants_threads)
            if missing:
                raise UserFacingError(
                    f"I cannot post in {target.mention}: I am missing {', '.join(missing)} there. "
                    "Give me those permissions in that channel and run /admin setup again."
                )
        if champion_role is not None:
            problem = unmanageable_role(champion_role)
            if problem:
                raise UserFacingError(
                    f"I cannot use {champion_role.mention} as the champion role: {problem}"
                )
        changes = guilds.SetupChanges(
            channel_id=channel.id if channel else None,
            post_time=time,
            timezone=timezone,
            weekly_day=guilds.WEEKDAYS.index(weekly_day) if weekly_day else None,
            moderator_role_id=moderator_role.id if moderator_role else None,
            champion_role_id=champion_role.id if champion_role else None,
            discussion_threads=threads,
            web_pages=web,
        )
        try:
            guild = await self.bot.services.write(
                guilds.configure,
                guild_id=guild_id,
                changes=changes,
                actor_user_id=interaction.user.id,
                now=clock.now(),
                tz=tz,
            )
        except guilds.SetupRefused as exc:
            raise UserFacingError(str(exc)) from None
        self._schedule().wake()
        await reply(interaction, _summary(guild, self.bot.services.settings))

    @staticmethod
    def _channel(
        interaction: discord.Interaction, current: Guild | None
    ) -> discord.TextChannel | None:
        if interaction.guild is None or current is None or current.quest_channel_id is None:
            return None
        found = interaction.guild.get_channel(current.quest_channel_id)
        return found if isinstance(found, discord.TextChannel) else None


def _summary(guild: Guild, settings: Settings) -> str:
    """The whole setup as it now stands, so a partial change shows its context."""
    weekday = guilds.WEEKDAYS[guild.weekly_post_day]
    lines = [
        f"The daily quest goes to <#{guild.quest_channel_id}> at {guild.post_time} "
        f"({guild.timezone}); the weekly leaderboard on {weekday}s at the same time. If today's "
        "post time has passed, today's quest is posted within seconds."
    ]
    if guild.moderator_role_id:
        lines.append(f"Moderator role: <@&{guild.moderator_role_id}>.")
    if guild.champion_role_id:
        lines.append(f"Champion role: <@&{guild.champion_role_id}>, for the week's first place.")
    lines.append(
        "Each daily post opens a discussion thread."
        if guild.discussion_threads
        else "Daily posts open no discussion thread."
    )
    lines.append(_web_line(guild, settings))
    return " ".join(lines)


def _web_line(guild: Guild, settings: Settings) -> str:
    """Whether the server's pages are public, and where (or what the operator must set)."""
    if not guild.web_pages:
        return "The boards, map and member pages are not on the web."
    links = page_links(settings, guild)
    if links is not None:
        return f"The boards, map and member pages are public at <{links.home()}>."
    missing = " and ".join(missing_settings(settings))
    return (
        "The boards, map and member pages are public, but the bot's operator must set "
        f"{missing} for anyone to reach them."
    )
