"""A poison job (its worker killed with SIGKILL on every attempt) ends as one "not your fault"
message to its member and holds back nobody: the verdicts queued behind it are each delivered
within seconds of being graded, on SQLite and on PostgreSQL."""

from __future__ import annotations

import re
import statistics
from datetime import UTC, datetime
from pathlib import Path

from tests.system.conftest import (
    BUILD,
    LEASE_SECONDS,
    Backend,
    all_gone,
    check_database,
    start_system,
    until,
)
from tests.system.database import SQLITE_TIMESTAMP

BEHIND = 10  # other members' submissions queued behind the poison job
#: from a verdict's grading to its delivery (measured on SQLite at load 3: max 1.02 s, median
#: 0.71 s for the 10 behind the poison job)
DELIVERED_WITHIN_S = 5.0

#: in flight for as long as it takes to kill its worker (the sandbox's wall limit is 10 s)
POISON = b'''"""Grades forever: its worker is killed while it waits."""

import time


def matmul_loops(A, B):
    time.sleep(120)


def matmul_dot(A, B):
    time.sleep(120)


def matmul_columns(A, B):
    time.sleep(120)
'''


def _moment(text: str) -> datetime:
    return datetime.strptime(text, SQLITE_TIMESTAMP).replace(tzinfo=UTC)


async def test_a_poison_job_blocks_no_later_verdict(tmp_path: Path, backend: Backend) -> None:
    async with start_system(tmp_path, backend) as system:
        await system.start_bot()
        worker = system.start_worker()  # warms up while the jobs are queued
        victim = system.learner()
        poisoned = await system.fake.invoke_slash(
            system.guild,
            system.quests,
            victim,
            "submit",
            options={"task": BUILD},
            attachments=[("solution.py", POISON)],
        )
        reply = (await poisoned.original(15)).content
        assert reply.startswith("Queued"), reply
        found = re.search(r"Submission #(\d+)", reply)
        assert found is not None, reply
        poison_id = int(found.group(1))
        others = [system.learner() for _ in range(BEHIND)]
        for member in others:
            assert (await (await system.submit(member)).original(15)).content.startswith("Queued")
        ((max_attempts,),) = system.query(
            "SELECT max_attempts FROM grading_jobs WHERE submission_id = ?", poison_id
        )

        # A killed worker's zygote only notices once its job ends, here at the wall limit: the
        # next worker starts meanwhile, as a pool's would, and they are checked gone at the end.
        orphans: set[int] = set()
        for attempt in range(1, max_attempts + 1):  # kill the worker on every attempt
            await worker.ready()
            await until(
                lambda attempt=attempt, pid=worker.pid: system.query(
                    "SELECT 1 FROM grading_jobs WHERE submission_id = ? AND status = 'running' "
                    "AND attempts = ? AND lease_owner LIKE ?",
                    poison_id,
                    attempt,
                    f"%:{pid}:%",
                ),
                60 + LEASE_SECONDS,
                f"worker {worker.pid} to take the poison job (attempt {attempt})",
            )
            below = await worker.kill(wait=False)
            assert below, f"worker {worker.pid} held the poison job without a zygote"
            orphans |= below
            system.reap |= below
            worker = system.start_worker()

        await worker.ready()
        total = BEHIND + 1
        await until(
            lambda: (
                system.query("SELECT COUNT(*) FROM submissions WHERE delivered_at IS NOT NULL")[0][
                    0
                ]
                == total
            ),
            180,
            f"all {total} verdicts to be delivered",
        )
        await worker.stop()
        await all_gone(orphans, 30, "the zygotes and jobs of the killed workers")
        system.reap -= orphans  # gone: their pids may be reused

        # The poison job: dead, one message that says it is not the member's fault, no XP.
        ((job_status,),) = system.query(
            "SELECT status FROM grading_jobs WHERE submission_id = ?", poison_id
        )
        assert job_status == "dead"
        assert system.verdict_messages(poison_id) == 1, system.verdicts_sent(poison_id)
        ((_, message),) = system.verdicts_sent(poison_id)
        assert message.startswith("Error: grading") and "not your fault" in message, message
        assert "nothing is lost" in message and "ask a moderator" in message, message
        ((paid,),) = system.query(
            "SELECT COALESCE(SUM(amount), 0) FROM xp_ledger JOIN members "
            "ON members.id = xp_ledger.member_id WHERE members.user_id = ?",
            victim.id,
        )
        assert paid == 0

        # Everyone behind it: their verdict within seconds of being graded.
        rows = system.query(
            "SELECT id, status, finished_at, delivered_at FROM submissions WHERE id != ? "
            "ORDER BY id",
            poison_id,
        )
        assert len(rows) == BEHIND
        delays = {
            submission_id: (_moment(delivered) - _moment(graded)).total_seconds()
            for submission_id, _, graded, delivered in rows
        }
        assert {status for _, status, _, _ in rows} == {"passed"}, rows
        late = {i: round(d, 2) for i, d in delays.items() if d > DELIVERED_WITHIN_S}
        assert not late, f"delivered more than {DELIVERED_WITHIN_S} s after grading: {late}"
        for submission_id in delays:
            assert system.verdict_messages(submission_id) == 1, submission_id
        check_database(system)
        print(
            f"poison job on {system.backend}: {max_attempts} attempts killed, then dead; "
            f"{BEHIND} verdicts behind it delivered after grading in "
            f"max {max(delays.values()):.2f} s, median {statistics.median(delays.values()):.2f} s"
        )
