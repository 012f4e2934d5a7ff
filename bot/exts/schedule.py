"""The daily quest post and the weekly leaderboard post, each once per period per server.

A loop wakes every ``clock.RECHECK_S`` (and at once when a moderator changes the
setup), asks ``bot.progress.post_times.catch_up`` which post is due for each
server, claims it in the post log and sends it.  After downtime only the
latest due period is posted: one catch-up post, not one per missed day.  A post of
several messages records each one as it goes (``post_log.record_parts``), so a retry
sends only the parts that did not go out.  With discussion threads on, a daily post then
opens a thread on its first message (``bot.daily_threads``).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import discord
from discord.ext import commands

from bot import clock, daily_threads, post_log
from bot.app import BrrrBot
from bot.content import Quest
from bot.db.models import Guild
from bot.guilds import with_quest_channel
from bot.presentation.images import weekly_chart
from bot.presentation.limits import batch_embeds, fit_embed, truncate
from bot.presentation.quest_embeds import quest_embeds
from bot.presentation.safety import safe_name
from bot.presentation.speed_board_embeds import fastest_line
from bot.progress.champions import Champion, crown
from bot.progress.highlights import weekly_highlights
from bot.progress.periods import Period, local_date, week_of
from bot.progress.post_times import PostKind, PostSchedule, catch_up

log = logging.getLogger(__name__)


#: the weekly post's chart, attached to its message
IMAGE_NAME = "week.png"
#: tied first places named in the weekly post (all of them get the champion role)
CHAMPIONS_NAMED = 20
#: Discord's error code when a message already has a thread
THREAD_ALREADY_EXISTS = 160004


class PostFailed(Exception):
    """The channel is missing or the bot may not post there; the message says which."""


@dataclass(frozen=True)
class Part:
    """One message of a post: its embeds and, for the weekly post, the chart they show."""

    embeds: list[discord.Embed]
    image: bytes | None = None


class Schedule(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def cog_load(self) -> None:
        self._task = asyncio.create_task(self._run(), name="scheduled-posts")

    async def cog_unload(self) -> None:
        if self._task:
            self._task.cancel()

    def wake(self) -> None:
        self._wake.set()

    async def _run(self) -> None:
        await self.bot.wait_until_ready()
        while True:
            try:
                await self.tick()
            except Exception:
                log.exception("scheduled posts failed; retrying next tick")
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), clock.RECHECK_S)

    async def tick(self) -> None:
        async with self.bot.services.reads() as session:
            configured = await with_quest_channel(session)
        for guild in configured:
            if self.bot.get_guild(guild.id) is None:
                continue  # the bot left this server
            schedule = PostSchedule.from_settings(
                guild.timezone, guild.post_time, guild.weekly_post_day
            )
            for kind in ("daily_quest", "weekly_leaderboard"):
                await self._maybe_post(guild, schedule, kind)

    async def _maybe_post(self, guild: Guild, schedule: PostSchedule, kind: PostKind) -> None:
        now = clock.now()
        async with self.bot.services.reads() as session:
            last = await post_log.last_period(session, guild.id, kind)
        due = catch_up(schedule, kind, now, last)
        if due is None or _before_setup(guild, due.fire_at):
            return
        async with self.bot.services.sessions() as session, session.begin():
            claim = await post_log.claim(session, guild.id, kind, due.key, now)
        if claim is None:
            return
        sent = list(claim.sent)
        try:
            channel = self._channel(guild)
            if kind == "daily_quest":
                parts = await self.daily_parts(guild, None, date.fromisoformat(due.key))
            else:
                parts = await self.weekly_parts(guild, previous_week(guild, now))
            for part in parts[len(sent) :]:
                message = await self.send_part(channel, part)
                sent.append(message.id)
                async with self.bot.services.sessions() as session, session.begin():
                    await post_log.record_parts(session, claim.id, sent, clock.now())
        except (PostFailed, discord.HTTPException) as exc:
            log.warning(
                "guild %d: %s %s not posted (%d part(s) sent; the next try resumes after them): %s",
                guild.id,
                kind,
                due.key,
                len(sent),
                exc,
            )
            async with self.bot.services.sessions() as session, session.begin():
                await post_log.release(session, claim.id)
            return
        thread_id = None
        if kind == "daily_quest" and guild.discussion_threads:
            # before mark_posted: a crash in between retries the thread, never the post
            day = date.fromisoformat(due.key)
            thread_id = await self._open_thread(guild, channel, sent[0], day, None)
        async with self.bot.services.sessions() as session, session.begin():
            await post_log.mark_posted(session, claim.id, channel.id, sent[0], now)
            if thread_id is not None:
                await daily_threads.record_thread(session, claim.id, thread_id)
        log.info("guild %d: posted %s %s in %d part(s)", guild.id, kind, due.key, len(sent))

    def _channel(self, guild: Guild) -> discord.TextChannel:
        channel = self.bot.get_channel(guild.quest_channel_id or 0)
        if not isinstance(channel, discord.TextChannel):
            raise PostFailed("no quest channel is configured; a moderator can run /admin setup")
        me = channel.guild.me
        missing = [
            name
            for name, ok in (
                ("View Channel", channel.permissions_for(me).view_channel),
                ("Send Messages", channel.permissions_for(me).send_messages),
                ("Embed Links", channel.permissions_for(me).embed_links),
                ("Attach Files", channel.permissions_for(me).attach_files),
            )
            if not ok
        ]
        if missing:
            raise PostFailed(f"I cannot post in #{channel.name}: missing {', '.join(missing)}")
        return channel

    async def send_part(self, channel: discord.TextChannel, part: Part) -> discord.Message:
        """Send one message of a post (a fresh file object each time: a file sends once)."""
        if part.image is None:
            return await channel.send(embeds=part.embeds)
        image = discord.File(io.BytesIO(part.image), filename=IMAGE_NAME)
        return await channel.send(embeds=part.embeds, file=image)

    async def _post(self, channel: discord.TextChannel, parts: list[Part]) -> discord.Message:
        """Send every part now (a moderator's command, outside the post log); the first
        message is returned."""
        messages = [await self.send_part(channel, part) for part in parts]
        return messages[0]

    async def post_daily(
        self, guild: Guild, quest: Quest | None, day: date | None = None
    ) -> discord.Message:
        """Post the quest of a local ``day`` (default today), or the given quest, in the quest
        channel, with its discussion thread when the server wants one; the first message is
        returned."""
        channel = self._channel(guild)  # what is wrong with the channel is said first
        day = day or local_date(clock.now(), ZoneInfo(guild.timezone))
        message = await self._post(channel, await self.daily_parts(guild, quest, day))
        if guild.discussion_threads:
            await self._open_thread(guild, channel, message.id, day, quest)
        return message

    async def _open_thread(
        self,
        guild: Guild,
        channel: discord.TextChannel,
        message_id: int,
        day: date,
        quest: Quest | None,
    ) -> int | None:
        """Open the discussion thread on a daily post's first message and post its opener.

        The thread's id, or None when it could not be opened: that is logged with the reason
        and the post stands without it (a missing thread never fails or repeats a post).
        """
        perms = channel.permissions_for(channel.guild.me)
        missing = [
            name
            for name, ok in (
                ("Create Public Threads", perms.create_public_threads),
                ("Send Messages in Threads", perms.send_messages_in_threads),
            )
            if not ok
        ]
        if missing:
            log.warning(
                "guild %d: no discussion thread for the daily post of %s: missing %s in #%s",
                guild.id,
                day.isoformat(),
                ", ".join(missing),
                channel.name,
            )
            return None
        quest = await self._daily_quest(guild, quest, day)
        name = daily_threads.thread_name(day, quest.title)
        try:
            thread = await channel.get_partial_message(message_id).create_thread(name=name)
        except discord.HTTPException as exc:
            if exc.code == THREAD_ALREADY_EXISTS:
                return message_id  # an earlier try opened it; a thread's id is its message's
            log.warning(
                "guild %d: no discussion thread for the daily post of %s: %s",
                guild.id,
                day.isoformat(),
                exc,
            )
            return None
        try:
            await thread.send(daily_threads.OPENER)
        except discord.HTTPException as exc:
            log.warning(
                "guild %d: thread %d opened without its opener: %s", guild.id, thread.id, exc
            )
        return thread.id

    async def _daily_quest(self, guild: Guild, quest: Quest | None, day: date) -> Quest:
        """The given quest, else the one the server's map schedules on ``day``."""
        if quest is not None:
            return quest
        guild_map = await self.bot.services.guild_map(guild.id)
        scheduled = guild_map.quest_on(guild.schedule_start or day, day)
        if scheduled is None:
            raise PostFailed("this server's map has no quests enabled")
        return scheduled

    async def daily_parts(self, guild: Guild, quest: Quest | None, day: date | None) -> list[Part]:
        """The messages of a daily post: the quest's embeds, batched to Discord's limits."""
        guild_map = await self.bot.services.guild_map(guild.id)
        day = day or local_date(clock.now(), ZoneInfo(guild.timezone))
        quest = await self._daily_quest(guild, quest, day)
        embeds = quest_embeds(
            quest,
            phase_title=guild_map.phase_titles.get(quest.phase, quest.phase),
            library=self.bot.services.content.library,
            heading=f"Quest of the day · {day.isoformat()}",
        )
        return [Part(batch) for batch in batch_embeds(embeds)]

    async def post_weekly(self, guild: Guild, week: Period) -> discord.Message:
        """Post a week's leaderboard: a bar chart of the top 10 and the week's highlights (the
        fastest speed result of the week among them)."""
        channel = self._channel(guild)
        return await self._post(channel, await self.weekly_parts(guild, week))

    async def weekly_parts(self, guild: Guild, week: Period) -> list[Part]:
        """The one message of a weekly post."""
        async with self.bot.services.reads() as session:
            highlights = await weekly_highlights(
                session,
                guild_id=guild.id,
                week=week,
                tz=ZoneInfo(guild.timezone),
                now=clock.now(),
            )
        discord_guild = self.bot.get_guild(guild.id)
        guild_name = discord_guild.name if discord_guild is not None else ""
        chart = await asyncio.to_thread(weekly_chart, highlights, guild_name=guild_name)
        champions = await self._crown(guild, week)
        lines = [
            f"{entry.rank}. **{safe_name(entry.display_name)}** · {entry.xp:,} XP"
            for entry in highlights.top
        ] or ["Nobody earned XP this week. A new week, a new chance!"]
        if champions:
            lines = [champion_line(champions), "", *lines]
        if highlights.fastest is not None:
            title = await self._task_title(guild, highlights.fastest.task_ref)
            lines += ["", fastest_line(highlights.fastest, title=title)]
        if highlights.level_ups:
            lines += ["", "**Level-ups**"] + [
                f"{safe_name(u.display_name)} reached level {u.new_level}"
                for u in highlights.level_ups[:10]
            ]
        if highlights.streaks:
            lines += ["", "**Longest streaks**"] + [
                f"{safe_name(s.display_name)}: {s.days} days" for s in highlights.streaks[:5]
            ]
        embed = discord.Embed(
            title=truncate(f"🏆 Week {week.key}: the leaderboard", 256),
            description="\n".join(lines),
        )
        embed.set_image(url=f"attachment://{IMAGE_NAME}")
        return [Part([fit_embed(embed)], image=chart)]

    async def _task_title(self, guild: Guild, task_ref: str) -> str | None:
        """The title of a task of the server's map; None when the map no longer has it."""
        guild_map = await self.bot.services.guild_map(guild.id)
        try:
            return guild_map.find_task(task_ref)[1].title
        except KeyError:
            return None

    async def _crown(self, guild: Guild, week: Period) -> tuple[Champion, ...]:
        """With a champion role configured, the week's first place(s) take it over; crowning
        a week again (a retried post) changes nothing."""
        if guild.champion_role_id is None:
            return ()
        crowned = await self.bot.services.write(
            crown, guild_id=guild.id, week_key=week.key, now=clock.now()
        )
        self.bot.dispatch("roles_changed", guild.id)
        return crowned


def champion_line(champions: Sequence[Champion]) -> str:
    """Names the week's first place(s); mentions in an embed ping nobody."""
    named = ", ".join(f"<@{c.user_id}>" for c in champions[:CHAMPIONS_NAMED])
    more = len(champions) - CHAMPIONS_NAMED
    if more > 0:
        named += f" and {more} more"
    title = "Champion" if len(champions) == 1 else "Champions"
    return f"🏆 {title} of the week: {named}"


def _before_setup(guild: Guild, fire_at: datetime) -> bool:
    """Posts due before the server was set up are not caught up (no stale first post)."""
    if guild.schedule_start is None:
        return False
    return local_date(fire_at, ZoneInfo(guild.timezone)) < guild.schedule_start


def previous_week(guild: Guild, now: datetime) -> Period:
    """The week that ended before the local today: what the weekly post celebrates."""
    tz = ZoneInfo(guild.timezone)
    today = local_date(now, tz)
    return week_of(today - timedelta(days=7), tz)


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Schedule(bot))
