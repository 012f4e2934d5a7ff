"""Benchmark: ``/solutions`` reads (``overview`` and a page) on a large server, in SQLite.

Builds (or reuses, with ``--db``) the server of ``bench/leaderboard.py``, adds ``--passes``
passing submissions of one shipped speed-ranked task with their trials (some members pass it
twice: one solution each is shown), ``--noise`` submissions of other tasks and statuses (so the
(server, task, status) index has something to skip), and lets half the members who passed
share.  Then it times, interleaved, what one ``/solutions`` reply reads (the overview, then the
first page, recording the read) and a random deeper page, against the baseline measured in the
same run: the task's speed board (``speed_board``, what ``/leaderboard board:speed`` reads).
Each call runs in its own session.  It prints medians, p95 and the ratio to the baseline's
median, and the query plan of the page's statement (it must search the index, not scan).

    .venv/bin/python -m bench.solutions [--requests 200] [--db PATH] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bench.leaderboard import GUILD_ID, NOW, build, summary
from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import Member, Submission
from bot.progress import solutions
from bot.progress.speed_results import speed_board
from tests.web.seeded import SPEED_TASK, speed_result, store_speed_result

OTHER_TASKS = ("go-brrrr/matmul-three-ways", "roofline/fused-gelu", "forward-pass/gpt2-block")


async def prepare(sessions: async_sessionmaker[AsyncSession], passes: int, noise: int) -> int:
    """Add the task's passes and the noise unless a run before did (a database of
    ``bench/web_pages.py`` has some passes already); the reader's user id."""
    async with sessions() as session:
        done = await session.scalar(select(func.count()).where(Member.shares_solutions))
        members = await session.scalar(select(func.count()).select_from(Member)) or 0
    rng = random.Random(7)
    runners = rng.sample(range(1, members + 1), k=max(2, passes * 4 // 5))
    if not done:
        started = time.perf_counter()
        async with sessions() as session, session.begin():
            for n in range(passes):
                when = NOW - timedelta(minutes=rng.randint(60, 60 * 24 * 60))
                await store_speed_result(
                    session,
                    guild_id=GUILD_ID,
                    member_id=runners[n % len(runners)],
                    speed=speed_result(round(rng.uniform(0.5, 4.0), 3)),
                    tag=n,
                    now=when,
                )
            code = b"def f(x):\n    return x\n"
            await session.execute(
                insert(Submission.__table__),
                [
                    {
                        "guild_id": GUILD_ID,
                        "member_id": rng.randint(1, members),
                        "task_ref": OTHER_TASKS[n % len(OTHER_TASKS)] if n % 5 else SPEED_TASK,
                        "filename": "solution.py",
                        "file_kind": "py",
                        "content": code,
                        "size_bytes": len(code),
                        "sha256": hashlib.sha256(code).hexdigest(),
                        "status": "failed" if n % 5 == 0 else rng.choice(("passed", "failed")),
                        "created_at": NOW - timedelta(days=1),
                        "delivery_attempts": 0,
                    }
                    for n in range(noise)
                ],
            )
            await session.execute(
                update(Member)
                .where(Member.id.in_(runners[: len(runners) // 2]))
                .values(shares_solutions=True)
            )
        print(
            f"added {passes:,} passes and {noise:,} other submissions in "
            f"{time.perf_counter() - started:.1f} s"
        )
    async with sessions() as session:
        reader = await session.scalar(  # a member who passed and does not share
            select(Member.user_id)
            .join(Submission, Submission.member_id == Member.id)
            .where(
                Submission.task_ref == SPEED_TASK,
                Submission.status == "passed",
                Member.shares_solutions.is_(False),
            )
            .limit(1)
        )
    assert reader is not None
    return reader


async def timed(
    sessions: async_sessionmaker[AsyncSession],
    call: Callable[[AsyncSession], Awaitable[object]],
    *,
    write: bool = False,
) -> float:
    started = time.perf_counter()
    async with sessions() as session:
        if write:
            async with session.begin():
                await call(session)
        else:
            await call(session)
    return (time.perf_counter() - started) * 1000


async def measure(sessions: async_sessionmaker[AsyncSession], reader: int, requests: int) -> None:
    async with sessions() as session:
        total = (
            await solutions.overview(
                session, guild_id=GUILD_ID, user_id=reader, task_ref=SPEED_TASK, speed_ranked=True
            )
        ).total
        plan = await session.execute(
            text(
                "EXPLAIN QUERY PLAN SELECT 1 FROM submissions WHERE guild_id = :g AND "
                "task_ref = :t AND status = 'passed'"
            ),
            {"g": GUILD_ID, "t": SPEED_TASK},
        )
        print("plan of the task's passes:", " / ".join(row[3] for row in plan))
        submissions = await session.scalar(select(func.count()).select_from(Submission))
    pages = max(1, -(-total // solutions.PAGE))
    print(f"{submissions:,} submissions; the reader can read {total:,} solutions ({pages} pages)")
    rng = random.Random(11)
    samples: dict[str, list[float]] = {"baseline": [], "reply": [], "deep page": []}

    def board(session: AsyncSession) -> Awaitable[object]:
        return speed_board(session, guild_id=GUILD_ID, task_ref=SPEED_TASK)

    async def reply(session: AsyncSession) -> None:
        await solutions.overview(
            session, guild_id=GUILD_ID, user_id=reader, task_ref=SPEED_TASK, speed_ranked=True
        )
        await page(session, 0)

    async def page(session: AsyncSession, number: int) -> None:
        await solutions.open_page(
            session,
            guild_id=GUILD_ID,
            user_id=reader,
            task_ref=SPEED_TASK,
            speed_ranked=True,
            page=number,
            now=NOW,
        )

    for warm in range(5):  # the page cache
        await timed(sessions, board)
        await timed(sessions, reply, write=True)
        del warm
    for _ in range(requests):
        samples["baseline"].append(await timed(sessions, board))
        samples["reply"].append(await timed(sessions, reply, write=True))
        deep = rng.randrange(pages)
        samples["deep page"].append(
            await timed(sessions, lambda s, n=deep: page(s, n), write=True)  # type: ignore[misc]
        )
    base = statistics.median(samples["baseline"])
    for name, values in samples.items():
        median, p95 = summary(values)
        print(f"{name:10} median {median:6.2f} ms  p95 {p95:6.2f} ms  ×{median / base:.2f}")


async def run(path: Path, fresh: bool, arguments: argparse.Namespace) -> None:
    engine = make_engine(f"sqlite+aiosqlite:///{path}")
    try:
        await migrate.upgrade(engine)
        sessions = make_sessionmaker(engine)
        if fresh:
            await build(sessions, arguments.members, arguments.rows)
        reader = await prepare(sessions, arguments.passes, arguments.noise)
        await measure(sessions, reader, arguments.requests)
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--passes", type=int, default=2_000)
    parser.add_argument("--noise", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="10k members, 200k ledger rows")
    parser.add_argument("--db", type=Path, help="keep the database; a second run reuses it")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.members, arguments.rows = 10_000, 200_000
        arguments.noise = min(arguments.noise, 10_000)
    if arguments.db is not None:
        asyncio.run(run(arguments.db, not arguments.db.exists(), arguments))
        return
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(run(Path(folder) / "solutions.sqlite3", True, arguments))


if __name__ == "__main__":
    main()
