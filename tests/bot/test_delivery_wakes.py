"""Verdict delivery wakes when a worker writes a verdict, and an idle bot leaves the database be.

The real bot (``brrrbot run`` through ``tests.bot.instrumented``) against the fake:

- idle, it sends no query to the database more often than once a second: every statement it
  sends is recorded (SQLAlchemy's ``before_cursor_execute``) and counted over a few seconds of
  real time, measured here;
- with its safety-net pass set to ten minutes, a verdict still reaches its member within
  seconds of the worker writing it: woken by its local worker's pipe on SQLite, by the
  queue's NOTIFY on PostgreSQL (there written by a worker the bot knows nothing of: this test).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from sqlalchemy import select

from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import GradingJob, Submission
from bot.exts.delivery import SAFETY_NET_S
from bot.jobs import queue
from fakediscord.handle import InteractionHandle
from graders.base import Verdict
from tests.bot.conftest import World, start_world
from tests.bot.instrumented import SAFETY_NET_ENV, STATEMENTS_ENV
from tests.postgres_server import PostgresServer
from tests.support import BUILD_TASK

pytestmark = pytest.mark.asyncio(loop_scope="module")

ENTRY = "tests.bot.instrumented:main"
#: how long the idle bot is watched (real time, measured)
IDLE_WINDOW_S = 8.0
#: the most often one query may be sent while idle
QUERY_EVERY_S = 1.0
#: a safety net this slow cannot be what delivers a verdict within ``PROMPT_S``
SLOW_SAFETY_NET_S = 600.0
#: "promptly": from the verdict's commit to its delivery, on a loaded two-core machine
#: (measured: 0.035-0.039 s on SQLite and 0.061-0.102 s on PostgreSQL in two runs at load 3;
#: the slow safety net would take 600 s, so the margin cannot hide a lost wake)
PROMPT_S = 5.0
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")
#: a column only delivery's query for verdicts to send reads
DELIVERY_QUERY = "submissions.reply_token"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def idle(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[World, Path]]:
    """A configured server, no local workers, the default safety net, statements recorded."""
    tmp = tmp_path_factory.mktemp("idle")
    statements = tmp / "statements.log"
    env = {STATEMENTS_ENV: str(statements)}
    async for world in start_world(tmp, workers=0, extra_env=env, entry=ENTRY):
        setup = await world.slash(world.owner, "admin setup", channel=world.quests, time="23:59")
        await setup.original()
        yield world, statements


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_an_idle_bot_sends_no_query_more_often_than_once_a_second(
    idle: tuple[World, Path],
) -> None:
    world, statements = idle
    await world.handled(await world.slash(world.owner, "help"))  # the bot is up and answering
    before = len(_lines(statements))
    started = time.monotonic()
    await asyncio.sleep(IDLE_WINDOW_S)  # the measurement itself: real idle time
    window_s = time.monotonic() - started
    sent = _lines(statements)[before:]
    queries = Counter(s for s in sent if not s.upper().startswith(TRANSACTION_CONTROL))
    # a query sent every QUERY_EVERY_S is seen at most this often in the window
    most = int(window_s // QUERY_EVERY_S) + 1
    summary = "\n".join(f"{n:4d}  {q[:150]}" for q, n in queries.most_common())
    print(f"{len(sent)} statements ({sum(queries.values())} queries) in {window_s:.1f} s idle:")
    print(summary)
    assert queries, "no query at all: the recording is broken (the safety nets do query)"
    too_often = {q: n for q, n in queries.items() if n > most}
    assert not too_often, f"sent more than {most} times in {window_s:.1f} s:\n{summary}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def local(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    """SQLite, the bot's local worker pool, and a safety net ten minutes long."""
    tmp = tmp_path_factory.mktemp("local")
    env = {SAFETY_NET_ENV: str(SLOW_SAFETY_NET_S), STATEMENTS_ENV: str(tmp / "statements.log")}
    async for world in start_world(tmp, workers=1, extra_env=env, entry=ENTRY):
        await world.bot.wait_for_output(" ready (", 120)  # the worker is up
        await _first_delivery_pass(tmp / "statements.log")
        yield world


async def _first_delivery_pass(statements: Path) -> None:
    """Until the delivery loop's first pass (at the bot's start) has looked for verdicts to
    send: the next one without a wake is a safety net away."""
    deadline = time.monotonic() + 60
    while not any(DELIVERY_QUERY in line for line in _lines(statements)):
        assert time.monotonic() < deadline, "no delivery pass within 60 s of the start"
        await asyncio.sleep(0.05)


async def _delivery_delay(url: str, submission_id: int) -> float:
    """Seconds from the worker's commit of the verdict (``finished_at``, its clock) to the bot's
    record of the delivery (``delivered_at``, its clock: both the real one), once recorded."""
    engine = make_engine(url)
    try:
        deadline = time.monotonic() + 30
        while True:
            async with make_sessionmaker(engine)() as session:
                finished, delivered = (
                    await session.execute(
                        select(GradingJob.finished_at, Submission.delivered_at)
                        .join(Submission, Submission.id == GradingJob.submission_id)
                        .where(Submission.id == submission_id, GradingJob.status == "done")
                    )
                ).one()
            if delivered is not None:
                return (delivered - finished).total_seconds()
            assert time.monotonic() < deadline, "the delivery was sent but never recorded"
            await asyncio.sleep(0.05)
    finally:
        await engine.dispose()


async def _submission_id(handle: InteractionHandle) -> int:
    queued = (await handle.original(15)).content
    found = re.search(r"Submission #(\d+)", queued)
    assert found is not None, queued
    return int(found.group(1))


async def test_a_local_workers_verdict_is_delivered_at_once_on_sqlite(local: World) -> None:
    assert SLOW_SAFETY_NET_S > 100 * PROMPT_S and SAFETY_NET_S >= QUERY_EVERY_S
    assert f"verdict-delivery runs every {SLOW_SAFETY_NET_S:g} s unless woken" in local.bot.output
    handle = await local.submit(local.learner())
    submission = await _submission_id(handle)
    await handle.wait_for(lambda m: m.content.startswith("Passed"), timeout=90)
    took = await _delivery_delay(f"sqlite+aiosqlite:///{local.database}", submission)
    print(f"SQLite, local worker: delivered {took:.3f} s after the verdict was written")
    assert 0 <= took < PROMPT_S


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def postgres(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[World, str]]:
    """PostgreSQL, no local workers (this test is the worker), a safety net ten minutes long."""
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = await server.create_database(migrated=False)
    tmp = tmp_path_factory.mktemp("pg-wakes")
    env = {
        "DATABASE_URL": url,
        SAFETY_NET_ENV: str(SLOW_SAFETY_NET_S),
        STATEMENTS_ENV: str(tmp / "statements.log"),
    }
    async for world in start_world(tmp, workers=0, extra_env=env, entry=ENTRY):
        await _first_delivery_pass(tmp / "statements.log")
        yield world, url


async def test_a_remote_workers_verdict_is_delivered_at_once_on_postgresql(
    postgres: tuple[World, str],
) -> None:
    world, url = postgres
    assert f"verdict-delivery runs every {SLOW_SAFETY_NET_S:g} s unless woken" in world.bot.output
    await world.bot.wait_for_output(f"listening for verdicts on channel {queue.VERDICTS_CHANNEL}")
    handle = await world.submit(world.learner())
    submission = await _submission_id(handle)
    engine = make_engine(url)  # a worker of its own, over TCP: the bot hears only the NOTIFY
    try:
        sessions = make_sessionmaker(engine)
        job = await queue.claim(sessions, "remote-test-worker")
        assert job is not None and job.submission_id == submission
        verdict = Verdict(BUILD_TASK, "passed", 1.0, (), "Every check passed.")
        assert await queue.complete(sessions, job, verdict)
    finally:
        await engine.dispose()
    await handle.wait_for(lambda m: m.content.startswith("Passed"), timeout=30)
    took = await _delivery_delay(url, submission)
    print(f"PostgreSQL, remote worker: delivered {took:.3f} s after the verdict was written")
    assert 0 <= took < PROMPT_S
