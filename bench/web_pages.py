"""Benchmark: the public web pages over real HTTP, at 100k members and 2M ledger rows, in SQLite.

Builds (or reuses, with ``--db``) the server of ``bench/leaderboard.py``, opts it in to web pages
and adds a few hundred speed results with roofline figures on one shipped speed-ranked task;
then serves the real site (``make_site``) on a free port and times sequential GETs from one
aiohttp client session: XP board pages (the first, random ones across the whole board, the
last), the speed board, the map, random members' pages, members with a speed result, and a 304
revalidation (``If-None-Match``).  In the same run, interleaved with the pages, it times the
baseline, the query the Discord ``/leaderboard`` reply makes (``leaderboard()``, 10 a page, with a
caller, each request in its own read session), and prints each page kind's median as a multiple
of it, its CPU time (the whole request runs in this process: what the machine's other jobs do
not inflate) and its SQL statements.  Target: every page p95 <= 20 ms (wall clock).  The clock
is set to the seeded ledger's "now", so the week and month boards are filled.

    .venv/bin/python -m bench.web_pages [--requests 300] [--db PATH] [--quick]
        --db PATH   keep the database; a second run reuses it and skips the seeding (minutes)
        --quick     10k members and 200k ledger rows (a fast check, not the target's size)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import aiohttp
from sqlalchemy import event, func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bench.leaderboard import GUILD_ID, NOW, TZ, build, summary
from bot import clock
from bot.config import Settings
from bot.content import load_content
from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import Guild, Member, SpeedRecord, XpEntry
from bot.http.server import listening
from bot.progress.leaderboard import leaderboard
from bot.services import Services
from bot.web.site import PAGE_SIZE, make_site
from tests.web.seeded import SPEED_TASK, speed_result, store_speed_result

REPO = Path(__file__).resolve().parent.parent
SERVER_NAME = "Bench Club"
TARGET_P95_MS = 20


class Names:
    """The Discord cache the site asks for names: one server, no roles."""

    def guild_name(self, guild_id: int) -> str | None:
        return SERVER_NAME if guild_id == GUILD_ID else None

    def role_name(self, guild_id: int, role_id: int) -> str | None:
        return None


async def add_speed_results(
    sessions: async_sessionmaker[AsyncSession], results: int, members: int
) -> None:
    """``results`` passing submissions of the speed task, each with its trial: a quarter of the
    members who have one have two (only the best ranks)."""
    rng = random.Random(3)
    runners = rng.sample(range(1, members + 1), k=max(1, results * 4 // 5))
    async with sessions() as session, session.begin():
        for n in range(results):
            member_id = runners[n % len(runners)]
            speed = speed_result(round(rng.uniform(0.5, 4.0), 3))
            when = NOW - timedelta(minutes=rng.randint(60, 60 * 24 * 60))
            await store_speed_result(
                session, guild_id=GUILD_ID, member_id=member_id, speed=speed, tag=n, now=when
            )


async def prepare(
    sessions: async_sessionmaker[AsyncSession], fresh: bool, arguments: argparse.Namespace
) -> None:
    """Seed (when fresh), opt the server in, and add the speed results it lacks."""
    if fresh:
        await build(sessions, arguments.members, arguments.rows)
    async with sessions() as session, session.begin():
        await session.execute(update(Guild).where(Guild.id == GUILD_ID).values(web_pages=True))
        members = (await session.execute(select(func.count()).select_from(Member))).scalar_one()
        have = (
            await session.execute(
                select(func.count())
                .select_from(SpeedRecord)
                .where(SpeedRecord.guild_id == GUILD_ID, SpeedRecord.task_ref == SPEED_TASK)
            )
        ).scalar_one()
    if have == 0:
        started = time.perf_counter()
        await add_speed_results(sessions, arguments.speed_results, members)
        print(
            f"added {arguments.speed_results} speed results with figures on {SPEED_TASK} "
            f"in {time.perf_counter() - started:.1f} s"
        )


def services(engine: AsyncEngine) -> Services:
    return Services(
        Settings(_env_file=None),  # type: ignore[call-arg]
        load_content(REPO / "quests"),
        engine,
        make_sessionmaker(engine),
        make_sessionmaker(engine, read_only=True),
    )


class Statements:
    """How many SQL statements the engine has sent: each read session's BEGIN among them, not
    its ROLLBACK (the driver's call, no statement)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.sent = 0
        event.listen(engine.sync_engine, "before_cursor_execute", self._count)

    def _count(self, *_: object) -> None:
        self.sent += 1


@dataclass
class Result:
    """One kind's samples: wall-clock ms (what the target is about), this process's CPU ms
    (client, server and SQLite's thread all run here, one request at a time, so the machine's
    other jobs barely move it) and the SQL statements each request sent."""

    kind: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    statements: list[int] = field(default_factory=list)

    @contextlib.contextmanager
    def sample(self, counter: Statements) -> Iterator[None]:
        wall, cpu, sent = time.perf_counter(), time.process_time(), counter.sent
        yield
        self.wall.append((time.perf_counter() - wall) * 1000)
        self.cpu.append((time.process_time() - cpu) * 1000)
        self.statements.append(counter.sent - sent)

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def p95(self) -> float:
        return summary(self.wall)[1]

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)

    @property
    def cpu_p95(self) -> float:
        return summary(self.cpu)[1]

    @property
    def sql(self) -> float:
        return statistics.median(self.statements)

    @property
    def met(self) -> bool:
        return self.p95 <= TARGET_P95_MS


@dataclass
class Kind:
    """One kind of page: the address of its next request, and the answer it must get."""

    name: str
    path: Callable[[random.Random], str]
    status: int = 200
    headers: dict[str, str] | None = None


async def get(
    http: aiohttp.ClientSession, url: str, kind: Kind, result: Result, counter: Statements
) -> None:
    """One GET (status line, headers and the whole body), sampled into ``result``."""
    with result.sample(counter):
        async with http.get(url, headers=kind.headers) as response:
            await response.read()
    if response.status != kind.status:
        raise SystemExit(
            f"GET {url} ({kind.name}): {response.status}, expected {kind.status} "
            f"(asked {kind.headers}, ETag {response.headers.get('ETag')})"
        )


async def baseline(
    site_services: Services,
    rng: random.Random,
    members: int,
    result: Result,
    counter: Statements,
) -> None:
    """What ``/leaderboard`` reads: a page of 10 (pages 1-5) and the caller's place."""
    page, caller = rng.randint(1, 5), rng.randint(1, members)
    with result.sample(counter):
        await site_services.read(
            leaderboard,
            guild_id=GUILD_ID,
            period="all",
            page=page,
            tz=TZ,
            now=clock.now(),
            caller_member_id=caller,
        )


async def measure(engine: AsyncEngine, requests: int) -> None:
    site_services = services(engine)
    async with site_services.reads() as session:
        members = (await session.execute(select(func.count()).select_from(Member))).scalar_one()
        rows = (await session.execute(select(func.count()).select_from(XpEntry))).scalar_one()
        user_ids = list(
            (await session.execute(select(Member.user_id).order_by(Member.id))).scalars()
        )
        runners = list(
            (
                await session.execute(
                    select(Member.user_id)
                    .join(SpeedRecord, SpeedRecord.member_id == Member.id)
                    .where(SpeedRecord.task_ref == SPEED_TASK)
                    .distinct()
                )
            ).scalars()
        )
    board = await site_services.read(
        leaderboard,
        guild_id=GUILD_ID,
        period="all",
        page=1,
        tz=TZ,
        now=clock.now(),
        caller_member_id=None,
        page_size=PAGE_SIZE,
    )
    pages = board.pages
    print(
        f"server: {members:,} members, {rows:,} ledger rows; all-time board {board.ranked:,} "
        f"ranked, {pages:,} pages of {PAGE_SIZE}; {len(runners)} members with a speed result"
    )
    quest, task = SPEED_TASK.split("/")
    kinds = [
        Kind("xp all, page 1", lambda rng: "/xp/all"),
        Kind("xp all, random page", lambda rng: f"/xp/all?page={rng.randint(1, pages)}"),
        Kind("xp all, last page", lambda rng: f"/xp/all?page={pages}"),
        Kind("xp week, page 1", lambda rng: "/xp/week"),
        Kind("speed board", lambda rng: f"/speed/{quest}/{task}"),
        Kind("speed index", lambda rng: "/speed"),
        Kind("map", lambda rng: "/map"),
        Kind("home", lambda rng: "/"),
        Kind("member, random", lambda rng: f"/members/{rng.choice(user_ids)}"),
        Kind("member, with speed", lambda rng: f"/members/{rng.choice(runners)}"),
    ]
    site = make_site(site_services, Names())
    async with listening(site, "127.0.0.1", 0) as port, aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{port}/g/{GUILD_ID}"
        async with http.get(url + "/xp/all") as response:
            tag = response.headers["ETag"]
        kinds.append(
            Kind("xp all, page 1, 304", lambda rng: "/xp/all", 304, {"If-None-Match": tag})
        )
        rng = random.Random(4)
        counter = Statements(engine)
        warm = Result("warm-up")
        for kind in kinds:  # warm the page cache, the map cache and the templates
            for _ in range(5):
                await get(http, url + kind.path(rng), kind, warm, counter)
        for _ in range(20):
            await baseline(site_services, rng, members, warm, counter)
        # Round robin, one request of each kind a round: a burst of load from the machine's
        # other jobs then lands on every kind alike, and on the baseline too.
        results = {kind.name: Result(kind.name) for kind in kinds}
        base = Result("/leaderboard query")
        started = time.perf_counter()
        for _ in range(requests):
            await baseline(site_services, rng, members, base, counter)
            for kind in kinds:
                await get(http, url + kind.path(rng), kind, results[kind.name], counter)
        elapsed = time.perf_counter() - started
    report(list(results.values()), base, requests)
    print(
        f"{requests} rounds in {elapsed:.0f} s; load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} CPUs"
    )


def report(results: list[Result], base: Result, requests: int) -> None:
    print(
        f"baseline, the /leaderboard query (leaderboard(): 10 a page and the caller's place, "
        f"its own read session): median {base.median:.2f} ms, p95 {base.p95:.2f} ms, "
        f"CPU median {base.cpu_median:.2f} ms, {base.sql:.0f} SQL statements"
    )
    width = max(len(r.kind) for r in results) + 2
    print(
        f"{'page':<{width}}{'median':>8}{'p95':>8}{'x base':>8}{'cpu med':>9}{'cpu p95':>9}"
        f"{'sql':>5}  p95 <= {TARGET_P95_MS} ms"
    )
    for r in results:
        print(
            f"{r.kind:<{width}}{r.median:>8.2f}{r.p95:>8.2f}{r.median / base.median:>8.1f}"
            f"{r.cpu_median:>9.2f}{r.cpu_p95:>9.2f}{r.sql:>5.0f}  {'met' if r.met else 'MISSED'}"
        )
    missed = [r.kind for r in results if not r.met]
    print(
        f"times in ms, {requests} sequential GETs of each kind; target p95 <= {TARGET_P95_MS} ms: "
        + ("met by every page" if not missed else "MISSED by " + ", ".join(missed))
    )


async def run(path: Path, fresh: bool, arguments: argparse.Namespace) -> None:
    engine = make_engine(f"sqlite+aiosqlite:///{path}")
    previous = clock.set_source(lambda: NOW)  # the ledger's now: week and month boards filled
    try:
        await migrate.upgrade(engine)
        await prepare(make_sessionmaker(engine), fresh, arguments)
        await measure(engine, arguments.requests)
    finally:
        clock.set_source(previous)
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, help="default 100,000 (--quick: 10,000)")
    parser.add_argument("--rows", type=int, help="default 2,000,000 (--quick: 200,000)")
    parser.add_argument("--speed-results", type=int, default=300)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="a server a tenth the size")
    parser.add_argument(
        "--db", type=Path, help="keep the database here, and reuse it if it exists (no seeding)"
    )
    arguments = parser.parse_args()
    scale = 10 if arguments.quick else 1
    arguments.members = arguments.members or 100_000 // scale
    arguments.rows = arguments.rows or 2_000_000 // scale
    if arguments.db is not None:
        asyncio.run(run(arguments.db, not arguments.db.exists(), arguments))
        return
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(run(Path(directory) / "bench.sqlite3", True, arguments))


if __name__ == "__main__":
    main()
