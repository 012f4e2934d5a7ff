"""A burst of 300 /submit from 100 members within 10 s against two workers: every submission
is refused with a clear message or gets exactly one verdict, and the per-member limits hold."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

from fakediscord import User
from tests.system.conftest import System, check_database, start_system, until

MEMBERS = 100
ROUNDS = 3
HOURLY_LIMIT = 2
BURST_S = 10.0
ACK_DEADLINE_S = 3.0
IN_FLIGHT = "still being graded; one at a time"
HOURLY = f"in the last hour (the limit is {HOURLY_LIMIT})"


async def _one(system: System, member: User, at: float) -> tuple[float, str]:
    await asyncio.sleep(max(0.0, at - time.monotonic()))  # the burst's schedule
    handle = await system.submit(member)
    latency = await handle.acked(ACK_DEADLINE_S + 1)
    return latency, (await handle.original(60)).content


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


async def test_burst_of_submissions_keeps_limits_and_loses_nothing(tmp_path: Path) -> None:
    async with start_system(tmp_path, SUBMISSIONS_PER_HOUR=str(HOURLY_LIMIT)) as system:
        await system.start_bot()
        workers = [system.start_worker(), system.start_worker()]
        await asyncio.gather(*(worker.ready() for worker in workers))
        members = [system.learner() for _ in range(MEMBERS)]
        start = time.monotonic() + 0.2
        spacing = BURST_S / (ROUNDS * MEMBERS)
        # Round 3 goes in reverse order, so the members whose second submission came first
        # (and is graded by then) try a third one last: they meet the hourly limit, the others
        # the one-in-flight rule.
        order = [members, members, members[::-1]]
        calls = [
            _one(system, member, start + (r * MEMBERS + i) * spacing)
            for r in range(ROUNDS)
            for i, member in enumerate(order[r])
        ]
        results = await asyncio.gather(*calls)
        sent_within = time.monotonic() - start

        latencies = sorted(latency for latency, _ in results)
        assert latencies[-1] < ACK_DEADLINE_S, latencies[-10:]
        kinds = Counter(
            "queued"
            if reply.startswith("Queued")
            else "in flight"
            if IN_FLIGHT in reply
            else "hourly"
            if HOURLY in reply
            else reply
            for _, reply in results
        )
        assert set(kinds) <= {"queued", "in flight", "hourly"}, kinds
        assert kinds["queued"] >= MEMBERS  # every member's first submission
        assert kinds["in flight"] >= 1  # a member's 2nd or 3rd while the previous one is graded

        await until(
            lambda: (
                system.query("SELECT COUNT(*) FROM submissions WHERE delivered_at IS NULL")[0][0]
                == 0
            ),
            120,
            "every verdict to be delivered",
        )
        ids = [row[0] for row in system.query("SELECT id FROM submissions")]
        assert len(ids) == kinds["queued"]
        for submission_id in ids:
            sent = system.verdicts_sent(submission_id)
            assert len(sent) == 1, (submission_id, sent)

        history: dict[int, list[tuple[datetime, datetime]]] = defaultdict(list)
        for member_id, created, finished in system.query(
            "SELECT member_id, created_at, finished_at FROM submissions ORDER BY created_at"
        ):
            history[member_id].append((_parse(created), _parse(finished)))
        assert len(history) == MEMBERS
        for member_id, spans in history.items():
            assert len(spans) <= HOURLY_LIMIT, (member_id, spans)
            for (_, finished), (created, _) in itertools.pairwise(spans):
                assert created >= finished, (member_id, spans)  # never two in flight
        check_database(system)
        print(
            f"burst: {len(results)} /submit from {MEMBERS} members in {sent_within:.1f} s, "
            f"replies {dict(kinds)}, ack p50 {latencies[len(latencies) // 2] * 1000:.0f} ms "
            f"max {latencies[-1] * 1000:.0f} ms, {len(ids)} verdicts delivered once each"
        )
