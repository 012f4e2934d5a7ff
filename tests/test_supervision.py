"""Supervision of the local pool: restarted whenever it exits, with backoff, and started with
the settings a worker needs and nothing of the bot's secrets.

The pool here is a stand-in process (a sleeper) so the supervisor's own behaviour is timed
without torch; tests/system/test_pool_supervision.py kills the real one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.background import Backoff, RetryPolicy
from bot.config import ENV_FILE_VARIABLE, Settings
from bot.runner import PoolSupervisor, worker_environment
from bot.worker import PARENT_PID_ENV
from tests.support import REPO

SECRET = "discord-token-that-must-stay-in-the-bot"
SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]


def test_backoff_doubles_to_its_ceiling_and_resets_after_a_healthy_run() -> None:
    backoff = Backoff(RetryPolicy(first_delay_s=1, max_delay_s=60), healthy_after_s=60)
    crash_loop = [backoff.delay(ran_for_s=0.5) for _ in range(8)]
    assert crash_loop == [1, 2, 4, 8, 16, 32, 60, 60]
    assert backoff.delay(ran_for_s=59) == 60  # not yet healthy
    assert backoff.delay(ran_for_s=61) == 1  # a minute of health: quick again
    assert backoff.delay(ran_for_s=0.5) == 2


def test_the_pool_gets_worker_settings_and_no_secret() -> None:
    environ = {
        "DISCORD_TOKEN": SECRET,
        "WORKER_DB_PASSWORD": "hunter2",
        "AWS_SECRET_ACCESS_KEY": "x",
        "PATH": "/usr/bin",
        "HOME": "/home/bot",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": "/srv/brrrbot",
        "VIRTUAL_ENV": "/srv/brrrbot/.venv",
        "LD_PRELOAD": "/usr/lib/faketime/libfaketime.so.1",
        "FAKETIME": "@2026-01-01 00:00:00",
        "CUDA_VISIBLE_DEVICES": "0",
    }
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        discord_token=SECRET,
        database_url="sqlite+aiosqlite:///./data/x.sqlite3",
        lease_seconds=7,
        worker_device="cpu",
        max_py_bytes=4096,
        max_notebook_bytes=2 * 1024 * 1024,
        quests_dir=Path("quests"),
        log_level="INFO",
    )
    env = worker_environment(environ, settings, parent_pid=4242)
    assert SECRET not in env.values()
    assert not {"DISCORD_TOKEN", "WORKER_DB_PASSWORD", "AWS_SECRET_ACCESS_KEY"} & env.keys()
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/bot",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": "/srv/brrrbot",
        "VIRTUAL_ENV": "/srv/brrrbot/.venv",
        "LD_PRELOAD": "/usr/lib/faketime/libfaketime.so.1",
        "FAKETIME": "@2026-01-01 00:00:00",
        "CUDA_VISIBLE_DEVICES": "0",
        "DATABASE_URL": "sqlite+aiosqlite:///./data/x.sqlite3",
        "QUESTS_DIR": "quests",
        "LOG_LEVEL": "INFO",
        "LOG_FORMAT": "text",
        "WORKER_DEVICE": "cpu",
        "LEASE_SECONDS": "7",
        "MAX_PY_BYTES": "4096",
        "MAX_NOTEBOOK_BYTES": str(2 * 1024 * 1024),
        PARENT_PID_ENV: "4242",
        ENV_FILE_VARIABLE: "",  # and it does not read the bot's .env either
    }


@contextlib.asynccontextmanager
async def _supervising(backoff: Backoff) -> AsyncIterator[PoolSupervisor]:
    environ = {**os.environ, "DISCORD_TOKEN": SECRET}
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    supervisor = PoolSupervisor(1, worker_environment(environ, settings, os.getpid()), backoff)
    supervisor.command = SLEEPER
    task = asyncio.create_task(supervisor.run())
    try:
        yield supervisor
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await supervisor.stop()


async def _next_pool(supervisor: PoolSupervisor, after: int | None, timeout: float) -> int:
    """Until the supervisor runs a pool other than ``after``; its pid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        process = supervisor.process
        if process is not None and process.returncode is None and process.pid != after:
            return process.pid
        await asyncio.sleep(0.02)
    raise AssertionError(f"no new pool within {timeout} s after pool {after}")


async def test_a_pool_that_exits_is_started_again_with_backoff() -> None:
    backoff = Backoff(RetryPolicy(first_delay_s=0.2, max_delay_s=0.8), healthy_after_s=60)
    async with _supervising(backoff) as supervisor:
        pid = await _next_pool(supervisor, None, 10)
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        names = {entry.split(b"=", 1)[0] for entry in environ if entry}
        assert b"DISCORD_TOKEN" not in names and SECRET.encode() not in b"".join(environ)
        assert {b"DATABASE_URL", PARENT_PID_ENV.encode()} <= names
        waits = []
        for how in (signal.SIGKILL, signal.SIGTERM, signal.SIGKILL, signal.SIGKILL):
            os.kill(pid, how)
            killed = time.monotonic()
            pid = await _next_pool(supervisor, pid, 10)
            waits.append(time.monotonic() - killed)
        # 0.2, 0.4, 0.8, 0.8 s: each wait at least its delay, and they grow
        for wait, delay in zip(waits, (0.2, 0.4, 0.8, 0.8), strict=True):
            assert delay <= wait < delay + 2.0, waits
        assert waits[2] > waits[0] + 0.3, waits


async def test_stopping_the_bot_stops_the_pool_and_starts_no_other() -> None:
    async with _supervising(Backoff(RetryPolicy(first_delay_s=0.05))) as supervisor:
        pid = await _next_pool(supervisor, None, 10)
    process = supervisor.process
    assert process is not None and process.pid == pid and process.returncode is not None
    await asyncio.sleep(0)  # the cancelled supervisor starts nothing afterwards
    assert supervisor.process is process


@pytest.mark.parametrize("code", [0, 1, 2])
async def test_any_exit_code_is_restarted(code: int) -> None:
    """A clean exit, a crash, a refusal to start: the pool is started again each time."""
    async with _supervising(
        Backoff(RetryPolicy(first_delay_s=0.05, max_delay_s=0.05))
    ) as supervisor:
        supervisor.command = [sys.executable, "-c", f"raise SystemExit({code})"]
        started: set[int] = set()
        deadline = time.monotonic() + 30
        while len(started) < 3:
            assert time.monotonic() < deadline, f"only {len(started)} pool(s) started in 30 s"
            if supervisor.process is not None:
                started.add(supervisor.process.pid)
            await asyncio.sleep(0.01)


#: ``brrrbot worker --count 2``'s supervisor with sleepers for workers (no torch to wait for)
POOL_OF_SLEEPERS = (
    "import sys\n"
    "from bot.worker import pool\n"
    "pool.worker_command = lambda count, insecure: "
    "[sys.executable, '-c', 'import time; time.sleep(600)']\n"
    "raise SystemExit(pool._supervise(2, insecure=False))\n"
)


def _children(pid: int) -> set[int]:
    try:
        return set(map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split()))
    except OSError:
        return set()


def _sleepers(pid: int) -> set[int]:
    """The pool's children that are workers already: a child between fork and exec still has
    the pool's command line and environment."""
    found = set()
    for child in _children(pid):
        try:
            if b"time.sleep(600)" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.add(child)
        except OSError:
            pass
    return found


def _told(pid: int, variable: bytes) -> set[int]:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return set()
    return {pid} if variable in environ else set()


def _new_workers(pool: int, known: set[int]) -> Callable[[], set[int]]:
    return lambda: _sleepers(pool) - known


def _two(found: set[int]) -> set[int]:
    return found if len(found) == 2 else set()


def _wait_for(check: Callable[[], set[int]], timeout: float, what: str) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def test_the_pool_restarts_each_worker_that_dies_with_backoff() -> None:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO)}
    pool = subprocess.Popen([sys.executable, "-c", POOL_OF_SLEEPERS], env=env)
    try:
        workers = _wait_for(lambda: _two(_sleepers(pool.pid)), 120, "the pool's two workers")
        told = f"{PARENT_PID_ENV}={pool.pid}".encode()
        for worker in workers:  # each stops with the pool (PR_SET_PDEATHSIG), none is orphaned
            # a process just past exec may show an empty environment for a moment
            _wait_for(lambda w=worker: _told(w, told), 10, f"{told!r} in {worker}'s environment")
        victim, survivor = sorted(workers)
        waits = []
        for _ in range(3):  # each further death of the same worker waits twice as long
            os.kill(victim, signal.SIGKILL)
            killed = time.monotonic()
            replaced = _wait_for(
                _new_workers(pool.pid, {victim, survivor}), 30, f"a worker after {victim}"
            )
            waits.append(time.monotonic() - killed)
            (victim,) = replaced
        assert survivor in _children(pool.pid), "the other worker was restarted too"
        # 1, 2 and 4 s (plus the supervisor's polling): the waits grow, from a quick first one
        assert 1.0 <= waits[0] < 3.0 and waits[1] >= 2.0 and 4.0 <= waits[2] < 7.0, waits
        assert waits[2] >= waits[0] + 2.0, waits
        pool.terminate()
        assert pool.wait(30) == 0
        assert _children(pool.pid) == set()
    finally:
        if pool.poll() is None:
            pool.kill()
            pool.wait()
