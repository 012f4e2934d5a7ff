"""Every process below the bot killed at once (what the OOM killer may do to a busy host): the
bot starts a new local pool within seconds and every queued submission still gets its verdict.

With ``WORKERS=1`` the pool process is the worker itself; with 2 it is a supervisor of two
workers.  Either way the bot replaces the whole tree, and the pool it starts never holds the
Discord token in a readable environment.

On SQLite only: replacing the pool does not depend on the database, and what does (the new
pool's workers taking over the killed workers' jobs once their leases expire) is shown on
PostgreSQL too by test_worker_crashes.py and test_poison_job.py, which SIGKILL workers there,
and the bot's local pool on PostgreSQL by tests/bot/test_on_postgres.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

import pytest

from tests.system.conftest import (
    System,
    all_gone,
    check_database,
    descendants,
    start_system,
    until,
)

SUBMISSIONS = 5
#: the issue's bound from the pool's death to a new pool, with margin for a loaded host left
#: to the first backoff (1 s); measured: 1.0 and 1.1 s (WORKERS=2 and 1, load 3)
NEW_POOL_S = 5.0


def _pools(system: System) -> list[int]:
    """The pids of every local pool the bot started, in order."""
    assert system.bot is not None
    return [
        int(pid) for pid in re.findall(r"local grading worker\(s\), pid (\d+)", system.bot.output)
    ]


def _finished(system: System) -> int:
    return system.query("SELECT COUNT(*) FROM submissions WHERE finished_at IS NOT NULL")[0][0]


def _environment(pid: int) -> dict[str, str] | None:
    """A process's environment as another process of the same user sees it (None: unreadable,
    as for an undumpable worker)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except PermissionError:
        return None
    entries = [entry.decode(errors="replace") for entry in raw.split(b"\0") if entry]
    return dict(entry.split("=", 1) for entry in entries if "=" in entry)


@pytest.mark.parametrize("workers", [1, 2])
async def test_a_killed_pool_is_replaced_and_the_queue_graded(tmp_path: Path, workers: int) -> None:
    async with start_system(tmp_path, WORKERS=str(workers)) as system:
        bot = await system.start_bot(local_workers=True)
        assert bot.pid is not None
        first = await until(lambda: _pools(system), 30, "the local pool to start")
        assert isinstance(first, list) and len(first) == 1
        environment = _environment(first[0])
        if workers > 1:  # the supervisor is not undumpable: its environment is readable
            assert environment is not None
        # a lone worker is the pool and makes itself undumpable (tests/test_undumpable.py), so
        # its environment may be unreadable by now; read, it holds the settings and no token
        if environment is not None:
            assert "DISCORD_TOKEN" not in environment, sorted(environment)
            assert "DATABASE_URL" in environment

        members = [system.learner() for _ in range(SUBMISSIONS)]
        replies = [(await (await system.submit(m)).original(15)).content for m in members]
        assert all(reply.startswith("Queued") for reply in replies), replies
        await until(
            lambda: system.query("SELECT 1 FROM grading_jobs WHERE status = 'running'"),
            120,
            "a worker of the pool to claim a job",
        )

        # SIGKILL every process below the bot at once: pool, workers, zygotes, jobs
        below = descendants(bot.pid)
        system.reap |= below
        finished_before = _finished(system)
        killed = time.monotonic()
        for pid in below:
            with contextlib.suppress(ProcessLookupError):  # a job may have just ended
                os.kill(pid, signal.SIGKILL)
        assert finished_before < SUBMISSIONS, "the pool graded everything before the kill"

        await until(lambda: len(_pools(system)) > 1, NEW_POOL_S, "a new local pool")
        new_pool_s = time.monotonic() - killed
        await all_gone(below, 30, "the killed processes")
        await until(lambda: _finished(system) > finished_before, 120, "a verdict from the new pool")
        first_verdict_s = time.monotonic() - killed
        await until(
            lambda: (
                system.query("SELECT COUNT(*) FROM submissions WHERE delivered_at IS NOT NULL")[0][
                    0
                ]
                == SUBMISSIONS
            ),
            180,
            "every queued submission's verdict to be delivered",
        )
        assert len(_pools(system)) == 2, "the new pool died too: " + bot.output[-3000:]
        new_pool = _pools(system)[1]
        assert new_pool not in below
        environment = _environment(new_pool)
        assert environment is None or "DISCORD_TOKEN" not in environment
        if workers > 1:  # the supervisor is not undumpable: its environment is readable
            assert environment is not None

        for (submission_id,) in system.query("SELECT id FROM submissions"):
            assert system.verdict_messages(submission_id) == 1, system.verdicts_sent(submission_id)
        statuses = {status for (status,) in system.query("SELECT status FROM submissions")}
        assert statuses == {"passed"}, statuses
        check_database(system)
        if workers > 1:
            # only the pool's own process dies: its workers stop with it (none is left
            # orphaned beside the next pool), and a new pool replaces them all
            workers_of_pool = descendants(new_pool)
            system.reap |= workers_of_pool
            os.kill(new_pool, signal.SIGKILL)
            await all_gone(workers_of_pool, 60, "the workers of the killed pool process")
            await until(lambda: len(_pools(system)) > 2, NEW_POOL_S, "a third local pool")
        print(
            f"pool supervision, WORKERS={workers}: {len(below)} processes killed, "
            f"{SUBMISSIONS - finished_before} submissions left; pool death -> new pool: "
            f"{new_pool_s:.1f} s; pool death -> first verdict: {first_verdict_s:.1f} s"
        )
