"""Worker heartbeats: who is grading, with what, and whether they were seen lately.

A worker upserts its row every ``presence.BEAT_S`` and deletes it when it stops cleanly; a
worker that died simply goes stale, and only rows newer than ``RECENT_S`` count as live.
The bot asks ``capable_worker_seen`` when a member submits, so "no GPU worker is around"
is said at once, not after a wait.
"""

from __future__ import annotations

import socket
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.db.dialect import upsert
from bot.db.models import WorkerHeartbeat
from bot.db.presence import RECENT_S
from bot.db.types import utcnow
from bot.jobs.capabilities import Capabilities, Peaks, Requirements


async def beat(
    sessions: async_sessionmaker[AsyncSession],
    name: str,
    capabilities: Capabilities,
    peaks: Peaks | None = None,
) -> None:
    """Say that worker ``name`` is alive, with what it can run and, once it has measured it,
    its roofline (``bot.worker.peaks``); a beat without ``peaks`` keeps the row's."""
    now = utcnow()
    roofline: dict[str, Any] = {}
    if peaks is not None:
        roofline = {
            "cpu_model": peaks.cpu_model[:128],
            "peak_gbs": peaks.bandwidth_gbs,
            "peak_gflops": peaks.gflops,
        }
    values = {
        "name": name,
        "host": socket.gethostname()[:255],
        "cuda": capabilities.cuda,
        "gpu_name": capabilities.gpu_name,
        "gpu_memory_mib": capabilities.gpu_memory_mib,
        "started_at": now,
        "last_seen_at": now,
        **roofline,
    }
    async with sessions() as session, session.begin():
        statement = upsert(session, WorkerHeartbeat).values(**values)
        await session.execute(
            statement.on_conflict_do_update(
                index_elements=[WorkerHeartbeat.name], set_={"last_seen_at": now, **roofline}
            )
        )


async def forget(sessions: async_sessionmaker[AsyncSession], name: str) -> None:
    async with sessions() as session, session.begin():
        await session.execute(delete(WorkerHeartbeat).where(WorkerHeartbeat.name == name))


async def capable_worker_seen(
    session: AsyncSession, needs: Requirements, now: datetime, within_s: float = RECENT_S
) -> bool:
    """Whether a worker able to run a job with ``needs`` has beaten within ``within_s``."""
    query = select(WorkerHeartbeat.name).where(
        WorkerHeartbeat.last_seen_at >= now - timedelta(seconds=within_s)
    )
    if needs.needs_cuda:
        query = query.where(
            WorkerHeartbeat.cuda.is_(True),
            WorkerHeartbeat.gpu_memory_mib >= needs.min_gpu_memory_mib,
        )
    return await session.scalar(query.limit(1)) is not None


async def prune(
    sessions: async_sessionmaker[AsyncSession], older_than_s: float = 24 * 3600
) -> None:
    """Drop rows of workers gone for a day (killed, never said goodbye), so the table stays
    the size of the fleet; every worker does it once at start."""
    cutoff = utcnow() - timedelta(seconds=older_than_s)
    async with sessions() as session, session.begin():
        await session.execute(delete(WorkerHeartbeat).where(WorkerHeartbeat.last_seen_at < cutoff))


async def live_workers(session: AsyncSession, now: datetime) -> int:
    """Workers that beat within ``RECENT_S`` of ``now`` (an index range on last_seen_at)."""
    since = now - timedelta(seconds=RECENT_S)
    query = select(func.count()).where(WorkerHeartbeat.last_seen_at >= since)
    return int(await session.scalar(query) or 0)
