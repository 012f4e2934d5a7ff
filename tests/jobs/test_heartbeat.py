"""Worker heartbeats: what the bot reads to say "no capable worker is around"."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db import presence
from bot.db.engine import make_sessionmaker
from bot.db.models import WorkerHeartbeat
from bot.db.types import utcnow
from bot.jobs import heartbeat
from bot.jobs.capabilities import Capabilities, Peaks, Requirements

GPU = Capabilities(cuda=True, gpu_name="H200", gpu_memory_mib=141 * 1024)
NEEDS_BIG_GPU = Requirements(needs_cuda=True, min_gpu_memory_mib=80 * 1024)


async def _age(engine: AsyncEngine, name: str, seconds: float) -> None:
    async with make_sessionmaker(engine)() as session, session.begin():
        await session.execute(
            update(WorkerHeartbeat)
            .where(WorkerHeartbeat.name == name)
            .values(last_seen_at=utcnow() - timedelta(seconds=seconds))
        )


async def test_beats_are_seen_until_they_go_stale(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    await heartbeat.beat(sessions, "gpu-1", GPU)
    await heartbeat.beat(sessions, "gpu-1", GPU)  # an upsert, not a second row
    async with sessions() as session:
        assert await heartbeat.capable_worker_seen(session, NEEDS_BIG_GPU, utcnow())
        assert await heartbeat.capable_worker_seen(session, Requirements(), utcnow())
        rows = (await session.execute(select(WorkerHeartbeat))).scalars().all()
    assert [(r.name, r.cuda, r.gpu_name) for r in rows] == [("gpu-1", True, "H200")]
    await _age(engine, "gpu-1", presence.RECENT_S + 1)
    async with sessions() as session:
        assert not await heartbeat.capable_worker_seen(session, NEEDS_BIG_GPU, utcnow())


async def test_a_cpu_worker_does_not_satisfy_a_cuda_task(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    await heartbeat.beat(sessions, "cpu-1", Capabilities())
    async with sessions() as session:
        assert await heartbeat.capable_worker_seen(session, Requirements(), utcnow())
        assert not await heartbeat.capable_worker_seen(
            session, Requirements(needs_cuda=True), utcnow()
        )


async def test_forget_and_prune_remove_rows(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    for name in ("stays", "stopped", "dead"):
        await heartbeat.beat(sessions, name, Capabilities())
    await heartbeat.forget(sessions, "stopped")
    await _age(engine, "dead", 2 * 24 * 3600)
    await heartbeat.prune(sessions)
    async with sessions() as session:
        names = (await session.execute(select(WorkerHeartbeat.name))).scalars().all()
    assert names == ["stays"]


async def test_a_killed_worker_stops_counting_within_three_beats(engine: AsyncEngine) -> None:
    """A live worker's row is at most a beat and a slow write old; a dead one's ages past three
    beats, and then the bot warns instead of promising a grader that is gone."""
    sessions = make_sessionmaker(engine)
    await heartbeat.beat(sessions, "cpu-1", Capabilities())
    await _age(engine, "cpu-1", 2.5 * presence.BEAT_S)  # one late beat: still live
    async with sessions() as session:
        assert await heartbeat.capable_worker_seen(session, Requirements(), utcnow())
    await _age(engine, "cpu-1", 3.5 * presence.BEAT_S)  # killed: no beat for three periods
    async with sessions() as session:
        assert not await heartbeat.capable_worker_seen(session, Requirements(), utcnow())


async def test_beats_carry_the_measured_roofline(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    roofline = Peaks("AMD EPYC 7B13", 18.25, 96.5)
    await heartbeat.beat(sessions, "cpu-1", Capabilities(), roofline)
    await heartbeat.beat(sessions, "cpu-1", Capabilities())  # a beat without keeps them
    await heartbeat.beat(sessions, "gpu-1", GPU, Peaks("Intel(R) Xeon(R) Platinum", 14.0, 70.0))
    await heartbeat.beat(sessions, "old-1", Capabilities())  # a worker that has none
    async with sessions() as session:
        rows = (
            await session.execute(select(WorkerHeartbeat).order_by(WorkerHeartbeat.name))
        ).scalars()
        columns = [(r.name, r.cpu_model, r.peak_gbs, r.peak_gflops) for r in rows]
    assert columns == [
        ("cpu-1", "AMD EPYC 7B13", 18.25, 96.5),
        ("gpu-1", "Intel(R) Xeon(R) Platinum", 14.0, 70.0),  # a CUDA host's CPU roofline too
        ("old-1", None, None, None),
    ]
    await heartbeat.beat(sessions, "old-1", Capabilities(), Peaks("Ampere Altra", 20.0, 30.0))
    async with sessions() as session:
        row = await session.get(WorkerHeartbeat, "old-1")
        assert row is not None and (row.cpu_model, row.peak_gbs) == ("Ampere Altra", 20.0)
