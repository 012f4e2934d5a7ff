"""The derived totals: ``member_xp`` and ``member_xp_counts``, in step with the ledger.

Rules:

- Each ledger row adds its amount to three totals of its member: all time, its local week and its
  local month (periods in the server's time zone, see ``bot.progress.periods``), in the same
  transaction as the ledger insert, so the totals never disagree with the ledger.
- ``reached_at`` is the time of the newest ledger row in the total: when that XP was reached.
- ``member_xp_counts`` holds, per board and XP value above 0, how many *listed* members are at
  that value; it moves with every listed total, and buckets that empty are deleted.
- A member who hides from the boards (``members.hidden``; an anonymised member is hidden too) has
  every total unlisted (``member_xp.listed`` false): kept, so their own profile still shows their
  numbers, but counted in no bucket, so ranks and board sizes close up around them.  Totals
  created while they are hidden start unlisted; ``set_listed`` moves them all at once.
- ``rebuild_totals`` recomputes both tables for a server from its ledger; run it after the server
  changes its time zone (weeks and months move with it).  A rebuild equals the incremental result.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo

from sqlalchemy import and_, case, delete, func, insert, not_, or_, select, true, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.dialect import upsert
from bot.db.models import Member, MemberXp, MemberXpCount, XpEntry
from bot.progress.periods import local_date, month_key, week_key

Board = Literal["all", "week", "month"]
ALL_TIME_KEY = "all"
_REBUILD_BATCH = 10_000


def period_key(board: Board, moment: datetime, tz: ZoneInfo) -> str:
    """The key of the period of ``board`` that contains ``moment``."""
    if board == "all":
        return ALL_TIME_KEY
    day = local_date(moment, tz)
    return week_key(day) if board == "week" else month_key(day)


def _boards(day: date) -> tuple[tuple[Board, str], ...]:
    """The three totals a row on the local date ``day`` counts towards."""
    return (("all", ALL_TIME_KEY), ("week", week_key(day)), ("month", month_key(day)))


async def add_to_totals(
    session: AsyncSession, *, guild_id: int, member_id: int, amount: int, at: datetime, tz: ZoneInfo
) -> None:
    """Add one ledger row's amount to its member's totals and, when they are listed, move them
    between XP buckets.  A total created now is listed unless the member is hidden."""
    listed = select(not_(Member.hidden)).where(Member.id == member_id).scalar_subquery()
    rows = [
        {
            "member_id": member_id,
            "period_kind": board,
            "period_key": key,
            "guild_id": guild_id,
            "xp": amount,
            "reached_at": at,
            "listed": listed,
        }
        for board, key in _boards(local_date(at, tz))
    ]
    statement = upsert(session, MemberXp).values(rows)
    newer = statement.excluded.reached_at > MemberXp.reached_at
    statement = statement.on_conflict_do_update(
        index_elements=[MemberXp.member_id, MemberXp.period_kind, MemberXp.period_key],
        set_={
            "xp": MemberXp.xp + statement.excluded.xp,
            "reached_at": case((newer, statement.excluded.reached_at), else_=MemberXp.reached_at),
        },
    ).returning(MemberXp.period_kind, MemberXp.period_key, MemberXp.xp, MemberXp.listed)
    totals = (await session.execute(statement)).all()
    if amount:
        moves = [(kind, key, xp - amount, xp) for kind, key, xp, on_board in totals if on_board]
        await _move_buckets(session, guild_id, moves)


async def set_listed(session: AsyncSession, *, guild_id: int, member_id: int, listed: bool) -> int:
    """List or unlist every total of one member, moving them into or out of the buckets; returns
    how many totals changed (0 when they already were so).

    The caller holds the member's row lock (``lock_member``) and flips ``members.hidden`` in the
    same transaction, so a concurrent award sees either both or neither.
    """
    statement = (
        update(MemberXp)
        .where(MemberXp.member_id == member_id, MemberXp.listed == (not listed))
        .values(listed=listed)
        .returning(MemberXp.period_kind, MemberXp.period_key, MemberXp.xp)
    )
    changed = (await session.execute(statement)).all()
    moves = [(kind, key, 0, xp) if listed else (kind, key, xp, 0) for kind, key, xp in changed]
    await _move_buckets(session, guild_id, moves)
    return len(changed)


async def _move_buckets(
    session: AsyncSession, guild_id: int, moves: list[tuple[str, str, int, int]]
) -> None:
    """Apply (board, key, old xp, new xp) moves to ``member_xp_counts``; drop emptied buckets."""
    deltas = [
        {"guild_id": guild_id, "period_kind": kind, "period_key": key, "xp": xp, "members": step}
        for kind, key, old, new in moves
        for xp, step in ((old, -1), (new, 1))
        if xp > 0
    ]
    if not deltas:
        return
    statement = upsert(session, MemberXpCount).values(deltas)
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[
                MemberXpCount.guild_id,
                MemberXpCount.period_kind,
                MemberXpCount.period_key,
                MemberXpCount.xp,
            ],
            set_={"members": MemberXpCount.members + statement.excluded.members},
        )
    )
    emptied = [
        and_(
            MemberXpCount.period_kind == kind,
            MemberXpCount.period_key == key,
            MemberXpCount.xp == old,
        )
        for kind, key, old, _ in moves
        if old > 0
    ]
    if emptied:
        await session.execute(
            delete(MemberXpCount).where(
                MemberXpCount.guild_id == guild_id, MemberXpCount.members == 0, or_(*emptied)
            )
        )


async def period_xp(session: AsyncSession, member_id: int, board: Board, key: str) -> int:
    """A member's XP in one period (0 when they have no row for it)."""
    query = select(MemberXp.xp).where(
        MemberXp.member_id == member_id, MemberXp.period_kind == board, MemberXp.period_key == key
    )
    return (await session.execute(query)).scalar_one_or_none() or 0


async def total_xp(session: AsyncSession, member_id: int) -> int:
    return await period_xp(session, member_id, "all", ALL_TIME_KEY)


@dataclass
class _Sum:
    xp: int
    reached_at: datetime


async def rebuild_totals(session: AsyncSession, *, guild_id: int, tz: ZoneInfo) -> int:
    """Recompute a server's totals and buckets from its ledger; returns the totals written.

    Local weeks and months need the zone rules, which SQL cannot apply portably, so the ledger is
    streamed through Python in batches; the buckets are then one GROUP BY over the new listed
    totals.  A hidden member's totals are written unlisted, as ``add_to_totals`` keeps them.
    """
    hidden = set(
        await session.scalars(
            select(Member.id).where(Member.guild_id == guild_id, Member.hidden == true())
        )
    )
    await session.execute(delete(MemberXp).where(MemberXp.guild_id == guild_id))
    await session.execute(delete(MemberXpCount).where(MemberXpCount.guild_id == guild_id))
    sums: dict[tuple[int, Board, str], _Sum] = {}
    boards_of_day: dict[date, tuple[tuple[Board, str], ...]] = {}
    query = (
        select(XpEntry.member_id, XpEntry.amount, XpEntry.created_at)
        .where(XpEntry.guild_id == guild_id)
        .execution_options(yield_per=_REBUILD_BATCH)
    )
    async for batch in (await session.stream(query)).partitions():
        for member_id, amount, created_at in batch:
            day = created_at.astimezone(tz).date()
            boards = boards_of_day.get(day)
            if boards is None:
                boards = boards_of_day[day] = _boards(day)
            for board, key in boards:
                total = sums.get((member_id, board, key))
                if total is None:
                    sums[(member_id, board, key)] = _Sum(amount, created_at)
                else:
                    total.xp += amount
                    total.reached_at = max(total.reached_at, created_at)
    rows: list[dict[str, Any]] = [
        {
            "member_id": member_id,
            "period_kind": board,
            "period_key": key,
            "guild_id": guild_id,
            "xp": total.xp,
            "reached_at": total.reached_at,
            "listed": member_id not in hidden,
        }
        for (member_id, board, key), total in sums.items()
    ]
    for start in range(0, len(rows), _REBUILD_BATCH):
        await session.execute(insert(MemberXp.__table__), rows[start : start + _REBUILD_BATCH])
    buckets = (
        select(
            MemberXp.guild_id,
            MemberXp.period_kind,
            MemberXp.period_key,
            MemberXp.xp,
            func.count(),
        )
        .where(MemberXp.guild_id == guild_id, MemberXp.listed == true(), MemberXp.xp > 0)
        .group_by(MemberXp.guild_id, MemberXp.period_kind, MemberXp.period_key, MemberXp.xp)
    )
    await session.execute(
        insert(MemberXpCount).from_select(
            ["guild_id", "period_kind", "period_key", "xp", "members"], buckets
        )
    )
    return len(rows)
