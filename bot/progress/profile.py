"""A member's progress in numbers, for ``/profile``.

Rules: total XP, level and progress come from the all-time total; the rank is the all-time
leaderboard place (None without XP), and for a member hidden from the boards the place they would
have (1 + the listed members ahead), with ``hidden`` set so it is shown as such; "this week" is
the server-local week containing now; a task is completed once it has paid any XP, and a quest
once every one of its tasks is completed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.models import Member
from bot.progress.leaderboard import rank_of
from bot.progress.ledger import completed_tasks, completion_days
from bot.progress.levels import LevelProgress, progress
from bot.progress.periods import local_date
from bot.progress.streaks import Streak, streak_on
from bot.progress.totals import ALL_TIME_KEY, period_key, period_xp, total_xp


@dataclass(frozen=True)
class Profile:
    member_id: int
    total_xp: int
    level: LevelProgress
    rank: int | None
    week_xp: int
    streak: Streak
    completed_tasks: tuple[str, ...]
    completed_quests: tuple[str, ...]
    hidden: bool = False  # off the public boards (``/privacy hide``)


async def profile(
    session: AsyncSession,
    *,
    guild_id: int,
    member_id: int,
    tz: ZoneInfo,
    now: datetime,
    content_task_refs_by_quest: Mapping[str, Collection[str]],
) -> Profile:
    """The numbers for one member; ``content_task_refs_by_quest`` maps quest id -> its task refs."""
    hidden = bool(await session.scalar(select(Member.hidden).where(Member.id == member_id)))
    total = await total_xp(session, member_id)
    entry = await rank_of(session, guild_id, "all", ALL_TIME_KEY, member_id)
    week = await period_xp(session, member_id, "week", period_key("week", now, tz))
    days = (await completion_days(session, [member_id], tz)).get(member_id, set())
    tasks = await completed_tasks(session, member_id)
    done = set(tasks)
    quests = sorted(
        quest
        for quest, refs in content_task_refs_by_quest.items()
        if refs and done.issuperset(refs)
    )
    return Profile(
        member_id=member_id,
        total_xp=total,
        level=progress(total),
        rank=entry.rank if entry else None,
        week_xp=week,
        streak=streak_on(days, local_date(now, tz)),
        completed_tasks=tuple(tasks),
        completed_quests=tuple(quests),
        hidden=hidden,
    )
