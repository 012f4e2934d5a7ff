"""The bot killed with SIGKILL between queueing and verdict: after a restart every verdict is
delivered once, queued jobs survive, and the bot's local worker pool does not outlive it."""

from __future__ import annotations

import re
from pathlib import Path

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
        await until(
            lambda: all(system.verdict_messages(i) for i in first), 30, "the late deliveries"
        )

        # 4. A second crash while verdicts are being graded and delivered.
        second = await _submit_wave(system)
        await until(
            lambda: system.query(
                f"SELECT 1 FROM submissions WHERE delivered_at IS NOT NULL AND id >= {min(second)}"
            ),
            30,
            "the first delivery of the second wave",
        )
        await system.kill_bot()
        await system.start_bot()
        await until(
            lambda: _finished(system, second) and all(system.verdict_messages(i) for i in second),
            60,
            "the second wave's deliveries",
        )
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
