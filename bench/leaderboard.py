"""Benchmark: a leaderboard page plus the caller's rank on a large server, in SQLite.

Builds a server with 100k members and 2M ledger rows (the totals table is filled by
``rebuild_totals``, itself timed), then times ``leaderboard()`` (page + caller rank, each request
in its own session as the bot does it) against the naive way, summing the ledger per request,
measured in the same run.  Target: p95 <= 10 ms for the all-time board.

    .venv/bin/python -m bench.leaderboard [--members 100000] [--rows 2000000] [--requests 500]
        [--db PATH]   (keeps the database; a second run reuses it and skips the 2-minute seeding)
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import Guild, Member, XpEntry
from bot.progress.leaderboard import PAGE_SIZE, leaderboard
from bot.progress.totals import Board, rebuild_totals

GUILD_ID = 1
TZ = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
BATCH = 50_000
TARGET_P95_MS = 10


async def seed(sessions: async_sessionmaker[AsyncSession], members: int, rows: int) -> None:
    """Members, then ledger rows spread over the last 90 days with random amounts."""
    rng = random.Random(1)
    async with sessions() as session, session.begin():
        session.add(Guild(id=GUILD_ID, timezone=TZ.key))
        await session.flush()
        people = [
            {"guild_id": GUILD_ID, "user_id": 10**17 + n, "display_name": f"learner {n}"}
            for n in range(members)
        ]
        for start in range(0, members, BATCH):
            await session.execute(insert(Member), people[start : start + BATCH])
    for start in range(0, rows, BATCH):
        batch = [
            {
                "guild_id": GUILD_ID,
                "member_id": rng.randint(1, members),
                "amount": rng.randint(5, 100),
                "reason": "bench",
                "source": "task",
                "reference": f"q{n % 500}/t",
                "idempotency_key": f"bench:{n}",
                "created_at": NOW - timedelta(seconds=rng.randint(0, 90 * 86_400)),
            }
            for n in range(start, min(start + BATCH, rows))
        ]
        async with sessions() as session, session.begin():
            await session.execute(insert(XpEntry), batch)


async def fast(session: AsyncSession, board: Board, page: int, caller: int) -> Any:
    return await leaderboard(
        session,
        guild_id=GUILD_ID,
        period=board,
        page=page,
        tz=TZ,
        now=NOW,
        caller_member_id=caller,
    )


async def naive(session: AsyncSession, board: Board, page: int, caller: int) -> Any:
    """The baseline: sum the ledger per member on every request (all-time board)."""
    sums = (
        select(XpEntry.member_id, func.sum(XpEntry.amount).label("xp"))
        .where(XpEntry.guild_id == GUILD_ID)
        .group_by(XpEntry.member_id)
        .subquery()
    )
    rows = (
        await session.execute(
            select(sums.c.member_id, Member.display_name, sums.c.xp)
            .join(Member, Member.id == sums.c.member_id)
            .order_by(sums.c.xp.desc(), sums.c.member_id)
            .limit(PAGE_SIZE)
            .offset((page - 1) * PAGE_SIZE)
        )
    ).all()
    mine = select(func.coalesce(func.sum(XpEntry.amount), 0)).where(XpEntry.member_id == caller)
    my_xp = (await session.execute(mine)).scalar_one()
    ahead = select(func.count()).select_from(sums).where(sums.c.xp > my_xp)
    return rows, (await session.execute(ahead)).scalar_one() + 1


Query = Callable[[AsyncSession, Board, int, int], Awaitable[Any]]


async def timings(
    sessions: async_sessionmaker[AsyncSession],
    query: Query,
    board: Board,
    requests: int,
    members: int,
) -> list[float]:
    rng = random.Random(2)
    samples = []
    for _ in range(requests):
        page, caller = rng.randint(1, 5), rng.randint(1, members)
        started = time.perf_counter()
        async with sessions() as session:
            await query(session, board, page, caller)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def summary(samples: list[float]) -> tuple[float, float]:
    return statistics.median(samples), statistics.quantiles(samples, n=100)[94]


async def build(sessions: async_sessionmaker[AsyncSession], members: int, rows: int) -> None:
    started = time.perf_counter()
    await seed(sessions, members, rows)
    print(
        f"seeded {members:,} members, {rows:,} ledger rows in {time.perf_counter() - started:.1f} s"
    )
    started = time.perf_counter()
    async with sessions() as session, session.begin():
        written = await rebuild_totals(session, guild_id=GUILD_ID, tz=TZ)
    print(f"rebuild_totals: {written:,} member_xp rows in {time.perf_counter() - started:.1f} s")


async def measure(
    sessions: async_sessionmaker[AsyncSession], requests: int, baseline_requests: int
) -> None:
    async with sessions() as session:
        members = (await session.execute(select(func.count()).select_from(Member))).scalar_one()
        rows = (await session.execute(select(func.count()).select_from(XpEntry))).scalar_one()
    print(f"server: {members:,} members, {rows:,} ledger rows")
    await timings(sessions, fast, "all", 20, members)  # warm the page cache
    results = {}
    for board in ("all", "month", "week"):
        results[board] = summary(await timings(sessions, fast, board, requests, members))
        median, p95 = results[board]
        print(
            f"leaderboard({board}) page + caller rank: "
            f"median {median:.2f} ms, p95 {p95:.2f} ms ({requests} requests)"
        )
    base_median, base_p95 = summary(
        await timings(sessions, naive, "all", baseline_requests, members)
    )
    print(
        f"baseline (SUM over the ledger, all time): median {base_median:.1f} ms, "
        f"p95 {base_p95:.1f} ms ({baseline_requests} requests)"
    )
    median, p95 = results["all"]
    verdict = "met" if p95 <= TARGET_P95_MS else "MISSED"
    print(
        f"speed-up (all time): median x{base_median / median:.0f}, p95 x{base_p95 / p95:.0f}; "
        f"target p95 <= {TARGET_P95_MS} ms: {verdict}"
    )


async def run(path: Path, fresh: bool, arguments: argparse.Namespace) -> None:
    engine = make_engine(f"sqlite+aiosqlite:///{path}")
    try:
        await migrate.upgrade(engine)
        sessions = make_sessionmaker(engine)
        if fresh:
            await build(sessions, arguments.members, arguments.rows)
        await measure(sessions, arguments.requests, arguments.baseline_requests)
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--baseline-requests", type=int, default=10)
    parser.add_argument(
        "--db", type=Path, help="keep the database here, and reuse it if it exists (no seeding)"
    )
    arguments = parser.parse_args()
    if arguments.db is not None:
        asyncio.run(run(arguments.db, not arguments.db.exists(), arguments))
        return
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(run(Path(directory) / "bench.sqlite3", True, arguments))


if __name__ == "__main__":
    main()
