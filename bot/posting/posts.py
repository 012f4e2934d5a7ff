"""The daily quest post and the weekly leaderboard post, each once per period per server.

A pass (``Posting.post_due``, run by the schedule cog's loop) asks
``bot.progress.post_times.catch_up`` which post is due for each server, claims it in the post
log and sends it.  After downtime only the latest due period is posted: one catch-up post, not
one per missed day.  A post of several messages records each one as it goes
(``post_log.record_parts``), so a retry sends only the parts that did not go out; a post the
channel or Discord refuses is released for the next pass.  With discussion threads on, a daily
post then opens a thread on its first message (``bot.daily_threads``).

One server's trouble never holds back another's posts: a pass that meets an unexpected error
in one server goes on with the others and raises it at the end (its claim stays pending, and
is taken over once stale, as a crashed bot's is).  A weekly post crowns the week's champions
(``bot.progress.champions.crown``), whether the schedule or a moderator (``post_weekly``)
makes it; crowning a week again changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Generic, Protocol
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot import clock, daily_threads, post_log
from bot.content import Quest
from bot.curriculum.guild_map import GuildMap
from bot.db.models import Guild
from bot.guilds import with_quest_channel
from bot.posting.post_transport import (
    DailyPost,
    PartT,
    PostFailed,
    PostTransport,
    SendRefused,
    ThreadRefused,
    WeeklyPost,
)
from bot.progress.champions import Champion, crown
from bot.progress.highlights import weekly_highlights
from bot.progress.periods import Period, local_date, week_of
from bot.progress.post_times import PostKind, PostSchedule, catch_up

log = logging.getLogger(__name__)

KINDS: tuple[PostKind, ...] = ("daily_quest", "weekly_leaderboard")


class Store(Protocol):
    """What posting needs of ``bot.services.Services``."""

    sessions: async_sessionmaker[AsyncSession]
    reads: async_sessionmaker[AsyncSession]

    async def guild_map(self, guild_id: int) -> GuildMap: ...


@dataclass(frozen=True)
class Posted:
    """Where a post went: its channel and its first message."""

    channel_id: int
    message_id: int


class Posting(Generic[PartT]):
    """The posts of every configured server, through ``transport``."""

    def __init__(self, store: Store, transport: PostTransport[PartT]) -> None:
        self.store = store
        self.transport = transport

    async def post_due(self) -> None:
        """Post whatever is due in each server the bot is in (one scheduled pass)."""
        async with self.store.reads() as session:
            configured = await with_quest_channel(session)
        failures: list[Exception] = []
        for guild in configured:
            if not self.transport.in_server(guild.id):
                continue  # the bot left this server
            schedule = PostSchedule.from_settings(
                guild.timezone, guild.post_time, guild.weekly_post_day
            )
            try:
                for kind in KINDS:
                    await self._post_if_due(guild, schedule, kind)
            except Exception as exc:  # the other servers' posts go on
                failures.append(exc)
        if len(failures) == 1:
            raise failures[0]
        if failures:
            raise ExceptionGroup(f"scheduled posts failed in {len(failures)} servers", failures)

    async def _post_if_due(self, guild: Guild, schedule: PostSchedule, kind: PostKind) -> None:
        now = clock.now()
        async with self.store.reads() as session:
            last = await post_log.last_period(session, guild.id, kind)
        due = catch_up(schedule, kind, now, last)
        if due is None or _before_setup(guild, due.fire_at):
            return
        async with self.store.sessions() as session, session.begin():
            claim = await post_log.claim(session, guild.id, kind, due.key, now)
        if claim is None:
            return
        sent = list(claim.sent)
        channel_id = guild.quest_channel_id or 0
        try:
            self.transport.check_channel(guild.quest_channel_id)
            if kind == "daily_quest":
                parts = await self.daily_parts(guild, None, date.fromisoformat(due.key))
            else:
                parts = await self.weekly_parts(guild, previous_week(guild, now))
            for part in parts[len(sent) :]:
                sent.append(await self.transport.send(channel_id, part))
                async with self.store.sessions() as session, session.begin():
                    await post_log.record_parts(session, claim.id, sent, clock.now())
        except (PostFailed, SendRefused) as exc:
            log.warning(
                "guild %d: %s %s not posted (%d part(s) sent; the next try resumes after them): %s",
                guild.id,
                kind,
                due.key,
                len(sent),
                exc,
            )
            async with self.store.sessions() as session, session.begin():
                await post_log.release(session, claim.id)
            return
        thread_id = None
        if kind == "daily_quest" and guild.discussion_threads:
            # before mark_posted: a crash in between retries the thread, never the post
            day = date.fromisoformat(due.key)
            thread_id = await self._open_thread(guild, channel_id, sent[0], day, None)
        async with self.store.sessions() as session, session.begin():
            await post_log.mark_posted(session, claim.id, channel_id, sent[0], now)
            if thread_id is not None:
                await daily_threads.record_thread(session, claim.id, thread_id)
        log.info("guild %d: posted %s %s in %d part(s)", guild.id, kind, due.key, len(sent))

    async def post_daily(
        self, guild: Guild, quest: Quest | None, day: date | None = None
    ) -> Posted:
        """Post the quest of a local ``day`` (default today), or the given quest, now (a
        moderator's command, outside the post log), with its discussion thread when the
        server wants one.  Raises ``PostFailed`` when the channel cannot take it."""
        self.transport.check_channel(guild.quest_channel_id)  # what is wrong is said first
        channel_id = guild.quest_channel_id or 0
        day = day or local_date(clock.now(), ZoneInfo(guild.timezone))
        posted = await self._send_all(channel_id, await self.daily_parts(guild, quest, day))
        if guild.discussion_threads:
            await self._open_thread(guild, channel_id, posted.message_id, day, quest)
        return posted

    async def post_weekly(self, guild: Guild, week: Period) -> Posted:
        """Post a week's leaderboard now (a moderator's command, outside the post log), which
        crowns its champions as the scheduled post does."""
        self.transport.check_channel(guild.quest_channel_id)
        channel_id = guild.quest_channel_id or 0
        return await self._send_all(channel_id, await self.weekly_parts(guild, week))

    async def _send_all(self, channel_id: int, parts: Sequence[PartT]) -> Posted:
        ids = [await self.transport.send(channel_id, part) for part in parts]
        return Posted(channel_id, ids[0])

    async def daily_parts(self, guild: Guild, quest: Quest | None, day: date) -> Sequence[PartT]:
        """The messages of a daily post."""
        return await self.transport.daily_parts(await self.daily_post(guild, quest, day))

    async def weekly_parts(self, guild: Guild, week: Period) -> Sequence[PartT]:
        """The messages of a weekly post (crowning the week's champions)."""
        return await self.transport.weekly_parts(await self.weekly_post(guild, week))

    async def daily_post(self, guild: Guild, quest: Quest | None, day: date) -> DailyPost:
        """What the daily post of ``day`` shows: the given quest, else the one the server's
        map schedules that day."""
        guild_map = await self.store.guild_map(guild.id)
        quest = await self._daily_quest(guild, quest, day)
        return DailyPost(guild.id, day, quest, guild_map.phase_titles.get(quest.phase, quest.phase))

    async def weekly_post(self, guild: Guild, week: Period) -> WeeklyPost:
        """What a week's post shows: its highlights (the fastest speed result of the week among
        them) and, with a champion role configured, the champions it crowns."""
        async with self.store.reads() as session:
            highlights = await weekly_highlights(
                session,
                guild_id=guild.id,
                week=week,
                tz=ZoneInfo(guild.timezone),
                now=clock.now(),
            )
        champions = await self._crown(guild, week)
        title = None
        if highlights.fastest is not None:
            title = await self._task_title(guild, highlights.fastest.task_ref)
        return WeeklyPost(guild.id, week, highlights, champions, title)

    async def _open_thread(
        self, guild: Guild, channel_id: int, message_id: int, day: date, quest: Quest | None
    ) -> int | None:
        """Open the discussion thread on a daily post's first message, with its opener.

        The thread's id, or None when it could not be opened: that is logged with the reason
        and the post stands without it (a missing thread never fails or repeats a post).
        """
        quest = await self._daily_quest(guild, quest, day)
        name = daily_threads.thread_name(day, quest.title)
        try:
            return await self.transport.open_thread(
                channel_id, message_id, name, daily_threads.OPENER
            )
        except ThreadRefused as exc:
            log.warning(
                "guild %d: no discussion thread for the daily post of %s: %s",
                guild.id,
                day.isoformat(),
                exc,
            )
            return None

    async def _daily_quest(self, guild: Guild, quest: Quest | None, day: date) -> Quest:
        if quest is not None:
            return quest
        guild_map = await self.store.guild_map(guild.id)
        scheduled = guild_map.quest_on(guild.schedule_start or day, day)
        if scheduled is None:
            raise PostFailed("this server's map has no quests enabled")
        return scheduled

    async def _task_title(self, guild: Guild, task_ref: str) -> str | None:
        """The title of a task of the server's map; None when the map no longer has it."""
        guild_map = await self.store.guild_map(guild.id)
        try:
            return guild_map.find_task(task_ref)[1].title
        except KeyError:
            return None

    async def _crown(self, guild: Guild, week: Period) -> tuple[Champion, ...]:
        """With a champion role configured, the week's first place(s) take it over; crowning
        a week again (a retried post) changes nothing."""
        if guild.champion_role_id is None:
            return ()
        async with self.store.sessions() as session, session.begin():
            crowned = await crown(session, guild_id=guild.id, week_key=week.key, now=clock.now())
        self.transport.roles_changed(guild.id)
        return crowned


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
