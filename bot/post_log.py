"""Scheduled posts happen once per (guild, kind, period): the post log's unique key decides.

A post is claimed (a ``pending`` row) before it is sent and marked ``posted``
with its message id after.  A claim left pending by a crash is taken over once
it is older than ``STALE_CLAIM``, so a bot killed mid-post still posts after a
restart, and two bots racing for the same period post once.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.dialect import upsert
from bot.db.models import PostLog

STALE_CLAIM = timedelta(minutes=2)


async def last_period(session: AsyncSession, guild_id: int, kind: str) -> str | None:
    """The newest period of ``kind`` already posted (keys sort in time order).

    A pending claim does not count: ``claim`` decides whether it is still being posted
    or was left by a crash and may be taken over.
    """
    return await session.scalar(
        select(func.max(PostLog.period)).where(
            PostLog.guild_id == guild_id, PostLog.kind == kind, PostLog.status == "posted"
        )
    )


async def claim(
    session: AsyncSession, guild_id: int, kind: str, period: str, now: datetime
) -> int | None:
    """The claimed row's id, or None when this period is posted or being posted elsewhere."""
    inserted = await session.execute(
        upsert(session, PostLog)
        .values(guild_id=guild_id, kind=kind, period=period, status="pending", created_at=now)
        .on_conflict_do_nothing()
        .returning(PostLog.id)
    )
    row_id = inserted.scalar_one_or_none()
    if row_id is not None:
        return row_id
    taken = await session.execute(
        update(PostLog)
        .where(
            PostLog.guild_id == guild_id,
            PostLog.kind == kind,
            PostLog.period == period,
            PostLog.status == "pending",
            PostLog.created_at < now - STALE_CLAIM,
        )
        .values(created_at=now)
        .returning(PostLog.id)
    )
    return taken.scalar_one_or_none()


async def mark_posted(
    session: AsyncSession, post_id: int, channel_id: int, message_id: int, now: datetime
) -> None:
    await session.execute(
        update(PostLog)
        .where(PostLog.id == post_id)
        .values(status="posted", channel_id=channel_id, message_id=message_id, posted_at=now)
    )


async def release(session: AsyncSession, post_id: int) -> None:
    """Drop a claim after a failed send so the next tick retries it."""
    await session.execute(delete(PostLog).where(PostLog.id == post_id, PostLog.status == "pending"))
