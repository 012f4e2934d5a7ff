"""The weekly champion: the week's first place holds the champion role until the next post.

Rules:

- When a week's leaderboard is posted, its first place is crowned: every listed member with the
  week's top XP (all of them on a tie), nobody when the top is 0.  Hidden and anonymised members
  are off the board, so they are never crowned.
- The current champions are the crowned members of the latest crowned week.  A week without a
  champion is recorded too (one ``NOBODY`` row), so last week's holders still lose the role.
- Crowning a week again (a retried post) gives the same result, and queues the previous holders
  and the new ones for a role check in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.models import Member, MemberXp, WeeklyChampion
from bot.progress.role_queue import queue_users

#: the user id of the row that says "this week had no champion" (no Discord user has id 0)
NOBODY = 0


@dataclass(frozen=True)
class Champion:
    user_id: int
    display_name: str
    xp: int


async def current_champions(session: AsyncSession, guild_id: int) -> set[int]:
    """The user ids holding the champion title now: the latest crowned week's."""
    latest = (
        select(func.max(WeeklyChampion.period))
        .where(WeeklyChampion.guild_id == guild_id)
        .scalar_subquery()
    )
    rows = await session.scalars(
        select(WeeklyChampion.user_id).where(
            WeeklyChampion.guild_id == guild_id,
            WeeklyChampion.period == latest,
            WeeklyChampion.user_id != NOBODY,
        )
    )
    return set(rows)


async def week_leaders(session: AsyncSession, guild_id: int, week_key: str) -> list[Champion]:
    """Every listed member with the week's top XP, first to reach it first; none at 0 XP."""
    board = (
        MemberXp.guild_id == guild_id,
        MemberXp.period_kind == "week",
        MemberXp.period_key == week_key,
        MemberXp.listed.is_(True),
    )
    top = await session.scalar(select(func.max(MemberXp.xp)).where(*board))
    if not top or top <= 0:
        return []
    rows = await session.execute(
        select(Member.user_id, Member.display_name, MemberXp.xp)
        .join(Member, Member.id == MemberXp.member_id)
        .where(*board, MemberXp.xp == top, Member.anonymised_at.is_(None))
        .order_by(MemberXp.reached_at, MemberXp.member_id)
    )
    return [Champion(user_id, name, xp) for user_id, name, xp in rows]


async def crown(
    session: AsyncSession, *, guild_id: int, week_key: str, now: datetime
) -> tuple[Champion, ...]:
    """Record the week's champions and queue everyone whose champion role changes with it."""
    previous = await current_champions(session, guild_id)
    champions = await week_leaders(session, guild_id, week_key)
    await session.execute(
        delete(WeeklyChampion).where(
            WeeklyChampion.guild_id == guild_id, WeeklyChampion.period == week_key
        )
    )
    holders = [c.user_id for c in champions] or [NOBODY]
    await session.execute(
        insert(WeeklyChampion),
        [
            {"guild_id": guild_id, "period": week_key, "user_id": user_id, "created_at": now}
            for user_id in holders
        ],
    )
    await queue_users(session, guild_id, previous | {c.user_id for c in champions}, now=now)
    return tuple(champions)
