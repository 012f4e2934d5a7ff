"""The whole system as separate processes: the real bot, real ``brrrbot worker`` processes and
the loopback fake Discord, so faults can be injected by killing any of them with SIGKILL.

Everything is checked afterwards in the bot's database and in what the fake recorded.

Backends.  ``start_system(tmp_path)`` runs on SQLite (the bot's default file in its working
directory).  A test that should also run on PostgreSQL takes the ``backend`` fixture and passes
it on; it then runs once per backend (ids ``[sqlite]`` and ``[postgresql]``)::

    async def test_something(tmp_path: Path, backend: Backend) -> None:
        async with start_system(tmp_path, backend) as system:
            ...

(only PostgreSQL: ``@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)``).
The PostgreSQL run gets a fresh, empty database on the session's throwaway server, which the
bot migrates at start; without the server binaries it skips with the reason, unless
``BRRRBOT_REQUIRE_POSTGRES=1`` (see tests/conftest.py).  Keep to ``system.query`` (``?``
placeholders, SQLite-shaped rows on both backends: see tests/system/database.py) and
``system.database_url``; ``system.database`` (the SQLite file) is for tests of SQLite itself.
Each backend run costs a whole system test: opt in where the backend matters (the queue's
claims and leases, the ledger, delivery), not everywhere.

After each test, every system whose bot was started has its database checked as
``brrrbot db verify`` checks it, in this process (``invariant_problems``); a problem fails the
test.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fakediscord import Channel, FakeDiscord, Guild, Permission, User
from fakediscord.gateway import Session
from fakediscord.handle import InteractionHandle
from fakediscord.process import BotProcess
from tests.faked_clock import faked_clock_env
from tests.postgres_server import BACKENDS, PostgresServer
from tests.support import REPO, SEED_QUESTS, verify_problems
from tests.system.database import SystemDatabase

CORRECT = (REPO / "tests" / "graders" / "solutions" / "correct.py").read_bytes()
BUILD = "go-brrrr/matmul-three-ways"
BUILD_XP = 60
FINISHED = ("passed", "failed", "error")
#: short enough that a killed worker's job is taken over within seconds
LEASE_SECONDS = 2


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (e.g. a worker's zygote and its jobs)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{current}/task"):
                with contextlib.suppress(OSError):
                    children = Path(f"/proc/{current}/task/{task}/children").read_text().split()
                    for child in map(int, children):
                        if child not in found:
                            found.add(child)
                            todo.append(child)
    return found


def alive(pid: int) -> bool:
    """Running, i.e. neither gone nor a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def until(check: Callable[[], object], timeout: float, what: str) -> object:
    """Poll ``check`` until it returns something truthy, failing after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := check():
            return result
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


async def all_gone(pids: set[int], timeout: float, what: str) -> None:
    await until(lambda: not any(alive(p) for p in pids), timeout, f"{what} to exit")


@dataclass
class WorkerProcess:
    """One ``brrrbot worker --count 1``: the worker runs in this process, its zygote below."""

    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    async def ready(self, timeout: float = 60) -> None:
        def check() -> bool:
            assert self.process.poll() is None, f"worker exited:\n{self.output()[-4000:]}"
            return " ready (" in self.output()

        await until(check, timeout, f"worker {self.pid} to be ready")

    async def kill(self, *, wait: bool = True) -> set[int]:
        """SIGKILL, then wait until its zygote (and any job) has noticed and gone too.

        With ``wait=False`` it returns at once with those processes instead, for a test that
        gets on meanwhile and waits for them later (``all_gone``): a zygote only notices once
        its job ends, which for a job that hangs is the job's wall limit.
        """
        below = descendants(self.pid)
        self.process.kill()
        self.process.wait(10)
        if wait:
            await all_gone(below, 30, f"the zygote of killed worker {self.pid}")
        return below

    async def stop(self) -> None:
        below = descendants(self.pid)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        await all_gone(below, 30, f"the zygote of worker {self.pid}")


@dataclass(frozen=True)
class Backend:
    """The database a system runs on; ``url`` None: the bot's default SQLite file."""

    name: str
    url: str | None = None


SQLITE = Backend("sqlite")


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest) -> Backend:
    """Each backend in turn, for the system tests that take it (see the module's docstring)."""
    if request.param == "sqlite":
        return SQLITE
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return Backend("postgresql", await server.create_database(migrated=False))


@dataclass
class System:
    fake: FakeDiscord
    guild: Guild
    quests: Channel
    workdir: Path
    env: dict[str, str]
    db: SystemDatabase
    bot: BotProcess | None = None
    workers: list[WorkerProcess] = field(default_factory=list)
    #: processes the test found and must not leave behind, whatever happens
    reap: set[int] = field(default_factory=set)
    _names: itertools.count = field(default_factory=lambda: itertools.count(1))
    _session: Session | None = None

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.db.backend

    @property
    def database_url(self) -> str:
        """The ``DATABASE_URL`` of the bot and its workers."""
        return self.db.url

    @property
    def database(self) -> Path:
        """The SQLite file; fails on PostgreSQL, so an SQLite-only step says so."""
        return self.db.sqlite_file

    def learner(self) -> User:
        user = self.fake.add_user(f"learner{next(self._names)}")
        self.fake.add_member(self.guild, user)
        return user

    async def start_bot(self, *, local_workers: bool = False) -> BotProcess:
        args = ["run"] if local_workers else ["run", "--no-workers"]
        self.bot = BotProcess(self.fake.urls, args, env=self.env, cwd=self.workdir)
        self.fake.watch(self.bot)
        await self.bot.start()
        self._session = await self.fake.wait_until_connected(60, replacing=self._session)
        return self.bot

    async def kill_bot(self) -> None:
        assert self.bot is not None
        self.bot.kill()
        await self.stop_bot()

    async def stop_bot(self) -> None:
        """Bounded: a child that outlives the bot keeps its output pipe open."""
        assert self.bot is not None
        try:
            await asyncio.wait_for(self.bot.stop(), 60)
        except TimeoutError:
            raise AssertionError("the bot's output stayed open: a child outlived it") from None

    def start_worker(self) -> WorkerProcess:
        log = self.workdir / f"worker-{len(self.workers)}.log"
        env = {
            "PATH": os.environ["PATH"],
            "PYTHONPATH": str(REPO),
            "DATABASE_URL": self.database_url,
            "QUESTS_DIR": str(SEED_QUESTS),
            "LEASE_SECONDS": str(LEASE_SECONDS),
            **faked_clock_env(),
        }
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "bot", "worker", "--count", "1"],
                cwd=self.workdir,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        worker = WorkerProcess(process, log)
        self.workers.append(worker)
        return worker

    async def submit(self, member: User) -> InteractionHandle:
        return await self.fake.invoke_slash(
            self.guild,
            self.quests,
            member,
            "submit",
            options={"task": BUILD},
            attachments=[("solution.py", CORRECT)],
        )

    def verdicts_sent(self, submission_id: int) -> list[tuple[str, str]]:
        """Every verdict the bot successfully sent for a submission, as (route, content): edits of
        the interaction's reply, DMs, channel posts."""
        marks = (f"Submission #{submission_id} ·", f"(submission #{submission_id})")
        sent = []
        for record in self.fake.requests:
            payload = record.payload if isinstance(record.payload, dict) else {}
            content = payload.get("content") or ""
            ok = record.status < 300 and not content.startswith("Queued")
            if ok and any(mark in content for mark in marks):
                sent.append((record.key, content))
        return sent

    def verdict_messages(self, submission_id: int) -> int:
        """How many messages the member saw a verdict in: repeated edits of the same reply
        (same content) show one message; each DM or channel post is one more."""
        sent = self.verdicts_sent(submission_id)
        edits = {content for route, content in sent if route.startswith("PATCH /webhooks")}
        return len(edits) + sum(1 for route, _ in sent if not route.startswith("PATCH /webhooks"))

    def query(self, sql: str, *args: object) -> list[tuple]:
        """One statement with ``?`` placeholders, on either backend; rows in SQLite's shapes."""
        return self.db.query(sql, *args)


@contextlib.asynccontextmanager
async def start_system(
    tmp_path: Path, backend: Backend = SQLITE, **settings: str
) -> AsyncIterator[System]:
    """The fake and its world on ``backend``; the test starts the bot and workers it needs.

    Afterwards everything is stopped and, if a bot was started, the database is checked for
    the project's invariants: a problem fails a test that had passed (and is printed beside
    the failure of one that had not).
    """
    fake = FakeDiscord(heartbeat_interval=1.0)
    guild = fake.add_guild("brrr study group")
    quests = fake.add_channel(guild, "quests")
    owner = fake.add_user("owner")
    admins = fake.add_role(guild, "admins", permissions=Permission.MANAGE_GUILD)
    fake.add_member(guild, owner, roles=[admins])
    env = {
        "DISCORD_TOKEN": fake.token,
        "QUESTS_DIR": str(SEED_QUESTS),
        "WORKERS": "1",
        "LOG_LEVEL": "INFO",
        "LEASE_SECONDS": str(LEASE_SECONDS),
        "HTTP_PORT": "0",  # bots of parallel runs must not compete for one port
        **settings,
    }
    if backend.url is not None:
        env["DATABASE_URL"] = backend.url
    # the SQLite run leaves DATABASE_URL unset: the bot's default file, as a user starts it
    url = backend.url or f"sqlite+aiosqlite:///{tmp_path / 'data' / 'brrrbot.sqlite3'}"
    async with fake:
        system = System(fake, guild, quests, tmp_path, env, SystemDatabase(url))
        passed = False
        try:
            yield system
            passed = True
        finally:
            try:
                await _stop_everything(system)
                if system.bot is not None:
                    problems = await invariant_problems(system)
                    if problems:
                        report = f"the {system.backend} database after the test:\n" + "\n".join(
                            problems
                        )
                        if passed:
                            raise AssertionError(report)
                        print(f"--- {report}")
            finally:
                system.db.close()


async def _stop_everything(system: System) -> None:
    """Workers, leftovers, the bot; their output's tail is printed for a failing test."""
    for worker in system.workers:
        await worker.stop()
    for pid in system.reap:
        if alive(pid):
            print(f"--- killing leftover process {pid} ---")
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    if system.bot is not None:
        with contextlib.suppress(AssertionError):
            await system.stop_bot()
        print("--- bot output (tail) ---\n" + system.bot.output[-6000:])
    for worker in system.workers:
        print(f"--- worker {worker.pid} (tail) ---\n" + worker.output()[-2000:])


async def invariant_problems(system: System) -> list[str]:
    """What ``brrrbot db verify`` finds wrong in the system's database (``verify_problems``)."""
    return await verify_problems(system.database_url, float(system.env["LEASE_SECONDS"]))


def ledger_mismatches(system: System) -> list[str]:
    """Members whose stored all-time total differs from the sum of their ledger rows."""
    rows = system.query(
        "SELECT members.id, COALESCE(member_xp.xp, 0), (SELECT COALESCE(SUM(amount), 0) "
        "FROM xp_ledger WHERE xp_ledger.member_id = members.id) FROM members "
        "LEFT JOIN member_xp ON member_xp.member_id = members.id "
        "AND member_xp.period_kind = 'all' AND member_xp.period_key = 'all' "
        "WHERE COALESCE(member_xp.xp, 0) != (SELECT COALESCE(SUM(amount), 0) FROM xp_ledger "
        "WHERE xp_ledger.member_id = members.id)"
    )
    return [
        f"member {member}: all-time total {total} XP, ledger sum {ledger} XP"
        for member, total, ledger in rows
    ]


def check_database(system: System) -> None:
    """Every job finished once, every verdict settled and delivered, totals equal the ledger."""
    jobs = system.query("SELECT status, COUNT(*) FROM grading_jobs GROUP BY status")
    assert {status for status, _ in jobs} <= {"done", "dead"}, jobs
    open_ = system.query(
        "SELECT id, status FROM submissions WHERE status NOT IN ('passed', 'failed', 'error') "
        "OR settled_at IS NULL OR delivered_at IS NULL OR delivered_via = 'undeliverable'"
    )
    assert not open_, open_
    mismatched = ledger_mismatches(system)
    assert not mismatched, mismatched
    paid_twice = system.query(
        "SELECT member_id, reference, COUNT(*), SUM(amount) FROM xp_ledger WHERE source = 'task' "
        "GROUP BY member_id, reference HAVING COUNT(*) > 1 OR SUM(amount) > ?",
        BUILD_XP,
    )
    assert not paid_twice, paid_twice
