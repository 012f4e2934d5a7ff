"""The numbers behind the weekly post: pure data for its chart and embed.

Rules:

- Top: the week's 10 highest XP totals, in leaderboard order (see ``bot.progress.leaderboard``).
- Level-ups: members whose level at the end of the week is above their level at its start
  (totals from the ledger at those two instants), biggest new level first, at most 10.
- Streaks: the 10 longest current streaks as of "now" (see ``bot.progress.streaks``); a streak
  needs at least 2 days to be listed.
- Fastest: the week's most tried speed-ranked task and its best result that week
  (``bot.progress.speed_results.fastest_of_week``); None when nobody had a speed result.
- The week is any ``Period`` from ``bot.progress.periods.week_of``: the bot passes the week it
  reports on (the week just ended, for a post at the start of a week).
- A member hidden from the boards (``/privacy hide``, or anonymised) is in none of them: the
  top closes up around them, and they are no level-up, no streak and not the fastest.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import case, false, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.models import Member, XpEntry
from bot.progress.leaderboard import Entry, standings
from bot.progress.ledger import COMPLETION_SOURCES, completion_days
from bot.progress.levels import level_for
from bot.progress.periods import Period, day_of, local_date
from bot.progress.speed_results import FastestOfWeek, fastest_of_week
from bot.progress.streaks import streak_on

LIMIT = 10
MIN_STREAK = 2


@dataclass(frozen=True)
class LevelUp:
    member_id: int
    user_id: int
    display_name: str
    old_level: int
    new_level: int


@dataclass(frozen=True)
class StreakRun:
    member_id: int
    user_id: int
    display_name: str
    days: int


@dataclass(frozen=True)
class WeeklyHighlights:
    week_key: str
    top: tuple[Entry, ...]
    level_ups: tuple[LevelUp, ...]
    streaks: tuple[StreakRun, ...]
    fastest: FastestOfWeek | None = None


async def weekly_highlights(
    session: AsyncSession, *, guild_id: int, week: Period, tz: ZoneInfo, now: datetime
) -> WeeklyHighlights:
    """The week's top, level-ups, fastest speed result and the longest current streaks as of
    ``now``."""
    if week.kind != "week":
        raise ValueError(f"weekly highlights need a week, not a {week.kind}")
    return WeeklyHighlights(
        week.key,
        await standings(session, guild_id, "week", week.key, limit=LIMIT),
        await _level_ups(session, guild_id, week),
        await _streaks(session, guild_id, tz, now),
        await fastest_of_week(session, guild_id=guild_id, week=week),
    )


async def _level_ups(session: AsyncSession, guild_id: int, week: Period) -> tuple[LevelUp, ...]:
    active = (
        select(XpEntry.member_id)
        .join(Member, Member.id == XpEntry.member_id)
        .where(
            XpEntry.guild_id == guild_id,
            XpEntry.created_at >= week.start,
            XpEntry.created_at < week.end,
            Member.hidden == false(),
        )
        .distinct()
    )
    before = func.sum(case((XpEntry.created_at < week.start, XpEntry.amount), else_=0))
    query = (
        select(XpEntry.member_id, before, func.sum(XpEntry.amount))
        .where(XpEntry.member_id.in_(active), XpEntry.created_at < week.end)
        .group_by(XpEntry.member_id)
    )
    changes = {
        member_id: (level_for(start), level_for(end))
        for member_id, start, end in await session.execute(query)
        if level_for(end) > level_for(start)
    }
    names = await _names(session, changes)
    ups = sorted(
        (
            LevelUp(member_id, *names[member_id], old, new)
            for member_id, (old, new) in changes.items()
        ),
        key=lambda up: (-up.new_level, up.member_id),
    )
    return tuple(ups[:LIMIT])


async def _streaks(
    session: AsyncSession, guild_id: int, tz: ZoneInfo, now: datetime
) -> tuple[StreakRun, ...]:
    today = local_date(now, tz)
    # Only members with a completion since yesterday began can have a current streak.
    recent = (
        select(XpEntry.member_id)
        .join(Member, Member.id == XpEntry.member_id)
        .where(
            XpEntry.guild_id == guild_id,
            XpEntry.source.in_(COMPLETION_SOURCES),
            XpEntry.amount > 0,
            XpEntry.created_at >= day_of(today - timedelta(days=1), tz).start,
            Member.hidden == false(),
        )
        .distinct()
    )
    days = await completion_days(session, recent, tz)
    current = {
        member_id: streak_on(member_days, today).current for member_id, member_days in days.items()
    }
    longest = sorted(
        (member_id for member_id, length in current.items() if length >= MIN_STREAK),
        key=lambda member_id: (-current[member_id], member_id),
    )[:LIMIT]
    names = await _names(session, longest)
    return tuple(
        StreakRun(member_id, *names[member_id], current[member_id]) for member_id in longest
    )


async def _names(session: AsyncSession, member_ids: Collection[int]) -> dict[int, tuple[int, str]]:
    """user id and display name per member id."""
    if not member_ids:
        return {}
    query = select(Member.id, Member.user_id, Member.display_name).where(Member.id.in_(member_ids))
    return {member_id: (user_id, name) for member_id, user_id, name in await session.execute(query)}
