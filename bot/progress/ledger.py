"""The append-only XP ledger: the one way XP is written, and the reads built on it.

Rules:

- Rows are only inserted, never updated or deleted (the database refuses both).  A correction is a
  new row, e.g. a moderator revoke is a negative amount.
- Every row carries an ``idempotency_key``; inserting an existing key does nothing (ON CONFLICT DO
  NOTHING), so an award retried or raced by a second process happens exactly once.
- Each inserted row updates the derived totals (``bot.progress.totals``) in the same transaction,
  and queues the member for a role check when their server hands out roles.
- Sources: ``task`` (graded build), ``quiz``, ``self`` (``/done``), ``streak`` (daily bonus),
  ``admin`` (moderator grant or revoke).  For the first three ``reference`` is the task
  (``QUEST/TASK``), and their rows with a positive amount are the member's completions.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal
from zoneinfo import ZoneInfo

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.dialect import upsert
from bot.db.models import Member, XpEntry
from bot.progress.periods import local_date
from bot.progress.role_queue import queue_member_if_roles
from bot.progress.totals import add_to_totals

Source = Literal["task", "quiz", "self", "streak", "admin"]
COMPLETION_SOURCES: tuple[Source, ...] = ("task", "quiz", "self")
REASON_CHARS = 200  # xp_ledger.reason


async def append(
    session: AsyncSession,
    *,
    guild_id: int,
    member_id: int,
    amount: int,
    source: Source,
    reason: str,
    reference: str | None,
    key: str,
    tz: ZoneInfo,
    now: datetime,
) -> bool:
    """Insert one ledger row unless its key exists; True when this call inserted it."""
    statement = (
        upsert(session, XpEntry)
        .values(
            guild_id=guild_id,
            member_id=member_id,
            amount=amount,
            reason=reason[:REASON_CHARS],
            source=source,
            reference=reference,
            idempotency_key=key,
            created_at=now,
        )
        .on_conflict_do_nothing(index_elements=[XpEntry.idempotency_key])
        .returning(XpEntry.id)
    )
    if (await session.execute(statement)).scalar_one_or_none() is None:
        return False
    await add_to_totals(
        session, guild_id=guild_id, member_id=member_id, amount=amount, at=now, tz=tz
    )
    if amount:
        await queue_member_if_roles(session, guild_id, member_id, now=now)
    return True


async def task_earned(session: AsyncSession, member_id: int, task_ref: str) -> int:
    """The XP a member has earned for one task so far."""
    query = select(func.coalesce(func.sum(XpEntry.amount), 0)).where(
        XpEntry.member_id == member_id,
        XpEntry.source.in_(COMPLETION_SOURCES),
        XpEntry.reference == task_ref,
    )
    return int((await session.execute(query)).scalar_one())


async def completed_tasks(session: AsyncSession, member_id: int) -> list[str]:
    """The tasks a member has earned XP for, sorted."""
    query = (
        select(XpEntry.reference)
        .where(XpEntry.member_id == member_id, XpEntry.source.in_(COMPLETION_SOURCES))
        .group_by(XpEntry.reference)
        .having(func.sum(XpEntry.amount) > 0)
        .order_by(XpEntry.reference)
    )
    return [ref for ref in (await session.execute(query)).scalars() if ref is not None]


async def completion_days(
    session: AsyncSession, member_ids: Collection[int] | Select[tuple[int]], tz: ZoneInfo
) -> dict[int, set[date]]:
    """Each member's local days with at least one completion (members without any are absent).

    ``member_ids`` may be a subquery, so a whole server's active members need no parameter list.
    """
    query = select(XpEntry.member_id, XpEntry.created_at).where(
        XpEntry.member_id.in_(member_ids),
        XpEntry.source.in_(COMPLETION_SOURCES),
        XpEntry.amount > 0,
    )
    days: dict[int, set[date]] = {}
    for member_id, created_at in await session.execute(query):
        days.setdefault(member_id, set()).add(local_date(created_at, tz))
    return days


@dataclass(frozen=True)
class LedgerLine:
    """One ledger row with its member, as the ``/admin export`` CSV lists it."""

    id: int
    created_at: datetime
    user_id: int
    display_name: str
    amount: int
    source: str
    reason: str
    reference: str | None


async def guild_ledger(session: AsyncSession, guild_id: int) -> list[LedgerLine]:
    """Every ledger row of a server, oldest first."""
    rows = await session.execute(
        select(XpEntry, Member.user_id, Member.display_name)
        .join(Member, Member.id == XpEntry.member_id)
        .where(XpEntry.guild_id == guild_id)
        .order_by(XpEntry.id)
    )
    return [
        LedgerLine(x.id, x.created_at, user_id, name, x.amount, x.source, x.reason, x.reference)
        for x, user_id, name in rows
    ]
