"""Scheduled posts happen once per (guild, kind, period): the post log's unique key decides.

A post is claimed (a ``pending`` row) before it is sent and marked ``posted``
with its first message's id after.  A claim left pending by a crash is taken over once
it is older than ``STALE_CLAIM``, so a bot killed mid-post still posts after a
restart, and two bots racing for the same period post once.

A post may take several messages (parts).  Each part's message id is recorded as soon as
it is sent, in its own transaction, and whoever claims the post next (this bot on its next
tick, or another bot taking over a stale claim) gets those ids back and sends only the parts
after them: a part is never sent twice, even when a later one keeps failing.  A failed post
with parts sent is left ``partial`` (claimable at once); one with nothing sent is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.dialect import upsert
from bot.db.models import PostLog

STALE_CLAIM = timedelta(minutes=2)


@dataclass(frozen=True)
class Claim:
    """A post this process may send now; ``sent`` holds the message ids of its parts already
    sent (by an earlier try or by a bot that died mid-post), in order."""

    id: int
    sent: tuple[int, ...] = ()


async def last_period(session: AsyncSession, guild_id: int, kind: str) -> str | None:
    """The newest period of ``kind`` already posted (keys sort in time order).

    A pending or partial claim does not count: ``claim`` decides whether it is still being
    posted or may be taken over.
    """
    return await session.scalar(
        select(func.max(PostLog.period)).where(
            PostLog.guild_id == guild_id, PostLog.kind == kind, PostLog.status == "posted"
        )
    )


async def claim(
    session: AsyncSession, guild_id: int, kind: str, period: str, now: datetime
) -> Claim | None:
    """The claim, or None when this period is posted or being posted elsewhere."""
    inserted = await session.execute(
        upsert(session, PostLog)
        .values(guild_id=guild_id, kind=kind, period=period, status="pending", created_at=now)
        .on_conflict_do_nothing()
        .returning(PostLog.id)
    )
    row_id = inserted.scalar_one_or_none()
    if row_id is not None:
        return Claim(row_id)
    taken = await session.execute(
        update(PostLog)
        .where(
            PostLog.guild_id == guild_id,
            PostLog.kind == kind,
            PostLog.period == period,
            or_(
                PostLog.status == "partial",
                (PostLog.status == "pending") & (PostLog.created_at < now - STALE_CLAIM),
            ),
        )
        .values(status="pending", created_at=now)
        .returning(PostLog.id, PostLog.sent_message_ids)
    )
    row = taken.first()
    if row is None:
        return None
    return Claim(row.id, tuple(int(message_id) for message_id in row.sent_message_ids or ()))


async def record_parts(
    session: AsyncSession, post_id: int, message_ids: Sequence[int], now: datetime
) -> None:
    """Remember every part sent so far; commit this before sending the next part.

    It also renews the claim, so a post whose parts are slow (rate limits) is not taken
    over as stale while it is still being sent.
    """
    await session.execute(
        update(PostLog)
        .where(PostLog.id == post_id, PostLog.status == "pending")
        .values(sent_message_ids=list(message_ids), created_at=now)
    )


async def mark_posted(
    session: AsyncSession, post_id: int, channel_id: int, message_id: int, now: datetime
) -> None:
    await session.execute(
        update(PostLog)
        .where(PostLog.id == post_id)
        .values(status="posted", channel_id=channel_id, message_id=message_id, posted_at=now)
    )


async def release(session: AsyncSession, post_id: int) -> None:
    """Give up a claim after a failed send so the next tick retries it: dropped when nothing
    was sent, else kept ``partial`` with its parts, for the next claim to resume after."""
    sent = await session.scalar(
        select(PostLog.sent_message_ids).where(PostLog.id == post_id, PostLog.status == "pending")
    )
    if sent:
        await session.execute(
            update(PostLog)
            .where(PostLog.id == post_id, PostLog.status == "pending")
            .values(status="partial")
        )
    else:
        await session.execute(
            delete(PostLog).where(PostLog.id == post_id, PostLog.status == "pending")
        )
