"""On PostgreSQL a queued job wakes an idle worker by NOTIFY, not by its slow poll."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_engine, make_sessionmaker
from bot.jobs import queue
from bot.worker.wakeup import Wakeup
from tests.postgres_server import PostgresServer
from tests.support import add_member, queue_submission

CANARY = "brrrbot_test_canary"
T = TypeVar("T")


@pytest.fixture
async def postgres_url(postgres_server: PostgresServer) -> str:
    return await postgres_server.create_database()


@pytest.fixture
async def engine(postgres_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(postgres_url)
    yield engine
    await engine.dispose()


async def _within(awaitable: Awaitable[T], seconds: float, what: str) -> T:
    """``awaitable``'s result, or a one-line failure saying ``what`` did not happen."""
    try:
        async with asyncio.timeout(seconds):
            return await awaitable
    except TimeoutError:
        raise AssertionError(f"{what} within {seconds} s") from None


async def test_a_queued_job_wakes_a_waiting_worker(engine: AsyncEngine) -> None:
    async with Wakeup(engine, poll_s=600) as wakeup:  # a poll this slow cannot be what wakes it
        assert wakeup.listening
        waiting = asyncio.create_task(wakeup.wait(asyncio.Event()))
        async with make_sessionmaker(engine)() as session, session.begin():
            await add_member(session)
            await queue_submission(session)
        await _within(waiting, 10, "no wakeup after a job was queued")
    job = await queue.claim(make_sessionmaker(engine), "w1")
    assert job is not None  # the job it woke for is visible


async def test_the_notification_waits_for_the_commit(
    engine: AsyncEngine, postgres_url: str
) -> None:
    """A worker is not told about a job it cannot see yet."""
    listener = await asyncpg.connect(postgres_url.replace("postgresql+asyncpg", "postgresql", 1))
    jobs: asyncio.Queue[str] = asyncio.Queue()
    canary = asyncio.Event()
    try:
        await listener.add_listener(queue.JOBS_CHANNEL, lambda *args: jobs.put_nowait(args[3]))
        await listener.add_listener(CANARY, lambda *_args: canary.set())
        async with make_sessionmaker(engine)() as session, session.begin():
            await add_member(session)
            _, job_id = await queue_submission(session)
            # Notifications arrive in commit order: had enqueue's gone out before its commit,
            # it would be in before this canary, committed later.
            await listener.execute(f"NOTIFY {CANARY}")
            await _within(canary.wait(), 10, "the canary notification did not arrive")
            assert jobs.empty(), "workers were notified of a job before its commit"
        payload = await _within(jobs.get(), 10, "no notification after the commit")
    finally:
        await listener.close()
    assert payload == str(job_id)
