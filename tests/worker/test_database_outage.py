"""Real ``brrrbot worker`` processes ride out a PostgreSQL restart and outages under load.

As an operator meets it: two workers grade submissions that take a while (a third is idle),
and while both are in the middle of one the throwaway server is restarted (``pg_ctl restart
-m fast``) or stopped for 15 s or 90 s (longer than the 30 s lease).  Each test first proves
the outage happened (a connection opened before it is dead, a connect during it refused), then
that every verdict that was in flight is recorded within 5 s of the server accepting
connections again, that jobs queued afterwards are graded, that every job was graded exactly
once (one attempt, one "graded" line in all the workers' logs), and that the workers are the
processes that were started (none exited and was restarted).
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import (
    SQLITE_BUSY_TIMEOUT_MS,
    make_engine,
    make_sessionmaker,
    parse_url,
    sqlite_path,
)
from bot.db.models import GradingJob, Submission, WorkerHeartbeat
from bot.db.states import FINISHED
from bot.worker.wakeup import Wakeup
from tests.outages import held_write_lock, refused
from tests.postgres_server import PostgresServer
from tests.support import SOLUTIONS, add_member, queue_submission, start_worker

#: a correct submission that takes a few seconds to grade, so that both workers are in the
#: middle of one when the database goes away, and compute its verdict during the outage
SLOW = b"import time\ntime.sleep(3)\n" + (SOLUTIONS / "correct.py").read_bytes()
#: two workers grade one job each through the outage while a third waits idle, polling
IN_FLIGHT = 2
WORKERS = 3
#: jobs queued after the database's return, which the workers (the idle one too) take up
LATER = 2
JOBS = IN_FLIGHT + LATER
#: what the issue asks: every in-flight verdict within this of the database's return
RECOVERY_S = 5.0
GRADED = re.compile(r"job (\d+) go-brrrr/matmul-three-ways passed")
T = TypeVar("T")


@pytest.fixture
async def url(postgres_server: PostgresServer) -> str:
    return await postgres_server.create_database()


@pytest.fixture
async def pg(url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(url)
    yield engine
    await engine.dispose()


def _raw(url: str) -> str:
    return url.replace("postgresql+asyncpg", "postgresql", 1)


async def _until(
    what: str,
    check: Callable[[], Awaitable[T]],
    workers: list[subprocess.Popen[str]],
    timeout: float,
) -> T:
    """Poll ``check()`` until it returns something truthy; fail if a worker exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        dead = [w for w in workers if w.poll() is not None]
        if dead:
            raise AssertionError(f"a worker exited ({what}):\n{dead[0].communicate()[1][-4000:]}")
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s: {what}")


async def _is(engine: AsyncEngine, query: Any, want: int) -> bool:
    async with make_sessionmaker(engine, read_only=True)() as session:
        return int(await session.scalar(query) or 0) == want


async def _queue(engine: AsyncEngine, members: range) -> None:
    async with make_sessionmaker(engine)() as session, session.begin():
        for member_id in members:
            await add_member(session, member_id)
            await queue_submission(session, SLOW, filename="slow.py", member_id=member_id)


async def _run_outage(
    server: PostgresServer, url: str, engine: AsyncEngine, tmp_path: Path, outage_s: float | None
) -> float:
    """Queue slow jobs, take the database away while two are in flight (a restart when
    ``outage_s`` is None, else a stop that long), check the recovery; the seconds from the
    database's return to the last in-flight verdict."""
    workers = [start_worker(url, tmp_path, WORKER_DEVICE="cpu") for _ in range(WORKERS)]
    pids = [worker.pid for worker in workers]
    try:
        beating = select(func.count()).select_from(WorkerHeartbeat)
        await _until("the workers ready", lambda: _is(engine, beating, WORKERS), workers, 180)
        await _queue(engine, range(1, IN_FLIGHT + 1))
        running = select(GradingJob.submission_id).where(GradingJob.status == "running")

        async def in_flight() -> list[int]:
            async with make_sessionmaker(engine, read_only=True)() as session:
                ids = list((await session.execute(running)).scalars())
            return ids if len(ids) == IN_FLIGHT else []

        flying = await _until("both workers grading", in_flight, workers, 60)
        witness = await asyncpg.connect(_raw(url))  # a connection from before the outage
        if outage_s is None:
            server.restart()
            back = time.monotonic()
        else:
            server.pause()
            down = time.monotonic()
            refused = 0
            while (left := outage_s - (time.monotonic() - down)) > 0:  # proves it all along
                with pytest.raises(OSError):
                    await asyncpg.connect(_raw(url), timeout=5)
                refused += 1
                await asyncio.sleep(min(1.0, left))
            assert refused >= 1
            server.resume()
            back = time.monotonic()
        with pytest.raises((asyncpg.InterfaceError, asyncpg.PostgresConnectionError, OSError)):
            await witness.fetchval("SELECT 1")  # the outage terminated it
        witness.terminate()

        finished = (
            select(func.count())
            .select_from(Submission)
            .where(Submission.id.in_(flying), Submission.status.in_(FINISHED))
        )
        await _until(
            "the in-flight verdicts", lambda: _is(engine, finished, IN_FLIGHT), workers, 120
        )
        recovered_s = time.monotonic() - back
        await _queue(engine, range(IN_FLIGHT + 1, JOBS + 1))
        done = select(func.count()).select_from(GradingJob).where(GradingJob.status == "done")
        await _until("every verdict", lambda: _is(engine, done, JOBS), workers, 120)
        assert [worker.poll() for worker in workers] == [None] * WORKERS  # none exited
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        logs = [worker.communicate(timeout=60)[1] for worker in workers]
    assert [worker.pid for worker in workers] == pids
    assert [worker.returncode for worker in workers] == [0] * WORKERS, logs
    graded = sum((Counter(GRADED.findall(log)) for log in logs), Counter())
    assert len(graded) == JOBS and set(graded.values()) == {1}, (graded, logs)  # each once
    async with make_sessionmaker(engine)() as session:
        attempts = list((await session.execute(select(GradingJob.attempts))).scalars())
        statuses = list((await session.execute(select(Submission.status))).scalars())
    assert attempts == [1] * JOBS, attempts  # no job claimed again after its lease expired
    assert statuses == ["passed"] * JOBS
    print(f"\nlast in-flight verdict {recovered_s:.2f} s after the database returned")
    assert recovered_s < RECOVERY_S, (recovered_s, logs)
    return recovered_s


async def test_workers_ride_out_a_restart(
    postgres_server: PostgresServer, url: str, pg: AsyncEngine, tmp_path: Path
) -> None:
    await _run_outage(postgres_server, url, pg, tmp_path, None)


@pytest.mark.parametrize("outage_s", [15.0, 90.0], ids=["15s", "90s"])
async def test_workers_ride_out_an_outage(
    postgres_server: PostgresServer, url: str, pg: AsyncEngine, tmp_path: Path, outage_s: float
) -> None:
    await _run_outage(postgres_server, url, pg, tmp_path, outage_s)


async def test_a_pooled_connection_dead_after_a_restart_is_replaced_before_use(
    postgres_server: PostgresServer, pg: AsyncEngine
) -> None:
    async with pg.connect() as connection:
        before = await connection.scalar(select(func.pg_backend_pid()))
    postgres_server.restart()  # the pooled connection is now dead
    async with pg.connect() as connection:  # pinged at checkout, replaced: no error here
        after = await connection.scalar(select(func.pg_backend_pid()))
    assert after != before


async def test_a_dropped_listen_connection_is_reestablished(url: str, pg: AsyncEngine) -> None:
    async with Wakeup(pg, poll_s=600) as wakeup:  # a poll this slow cannot be what wakes it
        admin = await asyncpg.connect(_raw(url))
        try:
            terminated = await admin.fetchval(
                "SELECT count(*) FROM pg_stat_activity, pg_terminate_backend(pid) "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        finally:
            await admin.close()
        assert terminated >= 1  # the listening connection among them
        # once listening again, the listener is told to look (a job may have come meanwhile)
        await asyncio.wait_for(wakeup.wait(asyncio.Event()), 10)
        waiting = asyncio.create_task(wakeup.wait(asyncio.Event()))
        async with make_sessionmaker(pg)() as session, session.begin():
            await add_member(session)
            await queue_submission(session)
        await asyncio.wait_for(waiting, 10)  # woken by the job's NOTIFY on the new connection


class _Log:
    """A worker's log (its stderr), read as it is written, so a test can wait for a line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self.lines.append("")  # the end: nothing more will come
            self._changed.notify_all()

    def _seen(self, text: str) -> bool:
        return any(text in line for line in self.lines) or self.lines[-1:] == [""]

    async def until(self, text: str, timeout: float) -> None:
        def wait() -> None:
            with self._changed:
                self._changed.wait_for(lambda: self._seen(text), timeout)

        await asyncio.to_thread(wait)
        assert any(text in line for line in self.lines), f"no {text!r} in:\n{self.text()[-4000:]}"

    def text(self) -> str:
        return "".join(self.lines)

    def stop(self) -> int:
        """SIGTERM; the exit code once the worker and its log have ended."""
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=60)
        self._reader.join(timeout=30)
        return code


async def _first_verdict_s(engine: AsyncEngine, worker: subprocess.Popen[str]) -> float:
    """Queue one quick job now; the seconds until its verdict is recorded."""
    start = time.monotonic()
    async with make_sessionmaker(engine)() as session, session.begin():
        await add_member(session, 1)
        await queue_submission(session, (SOLUTIONS / "correct.py").read_bytes(), member_id=1)
    done = select(func.count()).select_from(Submission).where(Submission.status == "passed")
    await _until("the first verdict", lambda: _is(engine, done, 1), [worker], 60)
    return time.monotonic() - start


async def test_a_worker_started_during_an_outage_waits_for_the_database_then_grades(
    postgres_server: PostgresServer, url: str, pg: AsyncEngine, tmp_path: Path
) -> None:
    """A worker host that boots before the database: the worker waits instead of exiting (an
    exit would leave it to the supervisor's backoff, up to a minute), and grades at once."""
    postgres_server.pause()
    try:
        assert await refused(postgres_server)
        print("OUTAGE: the worker starts while the server is stopped", flush=True)
        worker = start_worker(url, tmp_path, WORKER_DEVICE="cpu")
        log = _Log(worker)
        await log.until("the database does not answer (checking the schema", 180)
        assert worker.poll() is None, log.text()[-4000:]
    finally:
        postgres_server.resume()
    back = time.monotonic()
    try:
        first_s = await _first_verdict_s(pg, worker)
        since_back_s = time.monotonic() - back
    finally:
        code = log.stop()
        print("--- worker log ---\n" + log.text()[-6000:])  # shown on failure
    print(f"\nfirst verdict {since_back_s:.2f} s after the database returned ({first_s:.2f} s job)")
    assert code == 0, log.text()[-4000:]
    assert since_back_s < RECOVERY_S, log.text()[-4000:]
    assert log.text().count("the database answers again") == 1


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_worker_outlasts_sqlites_lock_held_past_the_busy_timeout(
    database_url: str, tmp_path: Path
) -> None:
    """Another process holds SQLite's write lock longer than the busy timeout while a worker
    grades: the verdict it computed meanwhile is kept and recorded once the lock lifts,
    and the job is graded once."""
    engine = make_engine(database_url)
    worker = start_worker(database_url, tmp_path, WORKER_DEVICE="cpu")
    log = _Log(worker)
    try:
        beating = select(func.count()).select_from(WorkerHeartbeat)
        await _until("the worker ready", lambda: _is(engine, beating, 1), [worker], 180)
        await _queue(engine, range(1, 2))
        running = select(func.count()).select_from(GradingJob).where(GradingJob.status == "running")
        await _until("the job running", lambda: _is(engine, running, 1), [worker], 60)
        database = sqlite_path(parse_url(database_url))
        assert database is not None
        async with held_write_lock(database):
            print("OUTAGE: SQLite's write lock held while the worker grades", flush=True)
            await log.until("the database does not answer", SQLITE_BUSY_TIMEOUT_MS / 1000 + 60)
        released = time.monotonic()
        done = select(func.count()).select_from(Submission).where(Submission.status == "passed")
        await _until("the verdict", lambda: _is(engine, done, 1), [worker], 60)
        recorded_s = time.monotonic() - released
        async with make_sessionmaker(engine)() as session:
            attempts = list((await session.execute(select(GradingJob.attempts))).scalars())
    finally:
        code = log.stop()
        await engine.dispose()
    print(f"\nverdict recorded {recorded_s:.2f} s after the lock lifted")
    assert code == 0, log.text()[-4000:]
    assert attempts == [1]
    assert len(GRADED.findall(log.text())) == 1, log.text()[-4000:]
    assert recorded_s < RECOVERY_S, log.text()[-4000:]
