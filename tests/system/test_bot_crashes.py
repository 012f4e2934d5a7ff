"""The bot killed with SIGKILL between queueing and verdict, and between Discord taking a verdict
and the bot recording it: after each restart every verdict is delivered once and recorded, queued
jobs survive, and the bot's local worker pool does not outlive it.

The test waits for deliveries as the database records them, never for the messages alone: Discord
has a message before the bot heard back and recorded it (always so for the verdict in flight at
the second kill, which the restarted bot edits in again, as the same message)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from fakediscord import RequestRecord
from tests.system.conftest import (
    System,
    alive,
    all_gone,
    check_database,
    descendants,
    start_system,
    until,
)

WAVE = 6
EDIT = "PATCH /webhooks/{application_id}/{token}/messages/{message_id}"


def _pool_pid(system: System) -> int:
    assert system.bot is not None
    found = re.search(r"local grading worker\(s\), pid (\d+)", system.bot.output)
    return int(found.group(1)) if found else 0


async def _submit_wave(system: System) -> list[int]:
    members = [system.learner() for _ in range(WAVE)]
    handles = [await system.submit(member) for member in members]
    replies = [(await handle.original(15)).content for handle in handles]
    assert all(reply.startswith("Queued") for reply in replies), replies
    return [int(re.search(r"Submission #(\d+)", reply).group(1)) for reply in replies]


def _verdict_in(record: RequestRecord) -> int | None:
    """The submission whose verdict a successful request carried, if it carried one."""
    content = (record.payload or {}).get("content") or ""
    found = re.search(r"Submission #(\d+) ·", content)
    if record.status >= 300 or content.startswith("Queued") or not found:
        return None
    return int(found.group(1))


def _new_verdict(after: int) -> Callable[[RequestRecord], bool]:
    """Whether a request carried the first verdict of a submission numbered above ``after``."""
    seen: set[int] = set()

    def first_of_its_submission(record: RequestRecord) -> bool:
        submission_id = _verdict_in(record)
        if submission_id is None or submission_id <= after or submission_id in seen:
            return False
        seen.add(submission_id)
        return True

    return first_of_its_submission


def _delivered(system: System, ids: list[int]) -> bool:
    """Every one of ``ids`` recorded as delivered (after its send had its answer)."""
    marks = ",".join(map(str, ids))
    rows = system.query(
        f"SELECT COUNT(*) FROM submissions WHERE id IN ({marks}) AND delivered_at IS NOT NULL"
    )
    return rows[0][0] == len(ids)


def _finished(system: System, ids: list[int]) -> bool:
    marks = ",".join(map(str, ids))
    rows = system.query(
        f"SELECT COUNT(*) FROM submissions WHERE id IN ({marks}) AND finished_at IS NOT NULL"
    )
    return rows[0][0] == len(ids)


async def test_verdicts_survive_bot_crashes(tmp_path: Path) -> None:
    async with start_system(tmp_path) as system:
        # 1. `brrrbot run` with its local pool; the bot dies right after queueing.
        await system.start_bot(local_workers=True)
        pool = await until(lambda: _pool_pid(system), 30, "the local pool to start")
        assert isinstance(pool, int)
        pool_tree = {pool} | descendants(pool)
        system.reap |= pool_tree
        first = await _submit_wave(system)
        await system.kill_bot()
        # the pool (and its zygote) notice the bot's death and stop: no orphan holds the DB
        await all_gone(pool_tree | descendants(pool), 60, "the dead bot's worker pool")
        queued = system.query("SELECT COUNT(*) FROM grading_jobs WHERE status = 'queued'")[0][0]
        unfinished = system.query("SELECT COUNT(*) FROM grading_jobs WHERE status != 'done'")
        assert unfinished[0][0] >= 1, "the pool graded the whole wave before the kill"

        # 2. While the bot is down, a worker grades what was queued.
        worker = system.start_worker()
        await until(lambda: _finished(system, first), 90, "the first wave's verdicts")
        assert not system.query("SELECT id FROM submissions WHERE delivered_at IS NOT NULL")

        # 3. Restarted, the bot delivers them (by editing the reply: the tokens still live).
        await system.start_bot()
        await until(lambda: _delivered(system, first), 30, "the late deliveries to be recorded")

        # 4. A second crash in the window a crash leaves open: Discord has taken the second
        #    wave's last verdict, and the bot has not heard back to record it.
        last = system.fake.hold_response(EDIT, when=_new_verdict(after=max(first)), after=WAVE - 1)
        second = await _submit_wave(system)
        in_flight = _verdict_in(await last.taken(60))
        await system.kill_bot()
        last.release()
        assert in_flight in second
        assert system.verdict_messages(in_flight) == 1
        unrecorded = system.query("SELECT id FROM submissions WHERE delivered_at IS NULL")
        assert (in_flight,) in unrecorded, unrecorded
        # restarted, it edits that reply again (the same message) and records it: wait for the
        # record, not for the message, which Discord had before the kill
        await system.start_bot()
        await until(lambda: _delivered(system, second), 60, "the second wave's deliveries")
        assert len(system.verdicts_sent(in_flight)) == 2, system.verdicts_sent(in_flight)
        await worker.stop()

        for submission_id in first + second:
            assert system.verdict_messages(submission_id) == 1, system.verdicts_sent(submission_id)
        via = dict(system.query("SELECT id, delivered_via FROM submissions"))
        assert set(via.values()) == {"edit"}, via
        assert not alive(pool)
        check_database(system)
        print(
            f"bot crashes: {2 * WAVE} submissions, 2 bot kills, {queued} jobs queued at the "
            "first kill, pool gone with the bot"
        )
