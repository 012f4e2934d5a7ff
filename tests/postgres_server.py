"""A throwaway PostgreSQL server for the test session, from the distribution's binaries.

``.ci/run`` installs the ``postgresql`` package; on a machine without it the PostgreSQL
variants of the database tests skip with a reason saying how to get them.  The server
listens on a free localhost port (so workers in other processes reach it exactly as a
remote worker would, over TCP), trusts local connections, and trades durability for
speed, since nothing here must survive a crash.  Each test gets its own database,
copied from a template that was migrated to head once.
"""

from __future__ import annotations

import asyncio
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import asyncpg
import pytest

from bot.db import migrate
from bot.db.engine import make_engine

BACKENDS = ("sqlite", "postgresql")
TEMPLATE = "brrrbot_template"
SUPERUSER = "postgres"
_FAST = (
    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
    "-c max_connections=300 -c listen_addresses=127.0.0.1"
)


class Unavailable(Exception):
    """No PostgreSQL server can be started here; the message says why."""


def find_bindir() -> Path:
    """Where ``initdb`` and ``pg_ctl`` live: Debian keeps them off PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if found:
        return Path(found[0]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    raise Unavailable(
        "PostgreSQL server binaries (initdb) not found; install them with "
        "`apt-get install postgresql` (.ci/run does) to run the PostgreSQL variants"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    def __init__(self) -> None:
        self.bindir = find_bindir()
        # not under pytest's tmp_path: its parents are private to this user, and the
        # server runs as `postgres` when we are root
        self.root = Path(tempfile.mkdtemp(prefix="brrrbot-postgres-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._names = itertools.count()
        self._user: str | None = None
        if os.geteuid() == 0:  # postgres refuses to run as root
            try:
                pwd.getpwnam(SUPERUSER)
            except KeyError:
                raise Unavailable("running as root and there is no `postgres` user") from None
            self._user = SUPERUSER

    def _run(self, *args: str) -> None:
        completed = subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            user=self._user,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if completed.returncode != 0:
            raise Unavailable(f"{args[0]} failed: {completed.stderr.strip()[-500:]}")

    def start(self) -> None:
        if self._user is not None:
            os.chmod(self.root, 0o755)
            shutil.chown(self.root, self._user)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        )
        log = self.root / "server.log"
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(log),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {self.port} -k {self.root} {_FAST}",
            "start",
        )
        # in a thread of its own: the fixture may be first requested from a running loop
        with ThreadPoolExecutor(1) as thread:
            thread.submit(asyncio.run, self._make_template()).result()

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every connection is terminated, as an operator's restart
        does; returns once the server accepts connections again."""
        log = self.root / "server.log"  # a server without -l would hold our output pipe open
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(log),
            "-m",
            "fast",
            "-w",
            "-t",
            "60",
            "restart",
        )

    def pause(self) -> None:
        """Stop the server (fast: connections terminated) until ``resume``."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Start a paused server again; returns once it accepts connections."""
        log = self.root / "server.log"
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(log),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {self.port} -k {self.root} {_FAST}",
            "start",
        )

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str, user: str = SUPERUSER, password: str = "") -> str:
        secret = f":{password}" if password else ""
        return f"postgresql+asyncpg://{user}{secret}@127.0.0.1:{self.port}/{database}"

    async def admin(self) -> asyncpg.Connection:
        return await asyncpg.connect(
            host="127.0.0.1", port=self.port, user=SUPERUSER, database="postgres"
        )

    async def _make_template(self) -> None:
        connection = await self.admin()
        try:
            await connection.execute(f'CREATE DATABASE "{TEMPLATE}"')
        finally:
            await connection.close()
        engine = make_engine(self.url(TEMPLATE))
        try:
            await migrate.upgrade(engine)
        finally:
            await engine.dispose()

    async def create_database(self, *, migrated: bool = True) -> str:
        """A new database's URL: a copy of the migrated template, or empty."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        connection = await self.admin()
        try:
            template = f' TEMPLATE "{TEMPLATE}"' if migrated else ""
            await connection.execute(f'CREATE DATABASE "{name}"{template}')
        finally:
            await connection.close()
        return self.url(name)


REQUIRE_ENV = "BRRRBOT_REQUIRE_POSTGRES"


def started_postgres() -> PostgresServer:
    """A fresh throwaway server, started; skips the test where PostgreSQL is not installed,
    fails it instead under ``BRRRBOT_REQUIRE_POSTGRES=1`` (CI)."""
    try:
        server = PostgresServer()
        server.start()
    except Unavailable as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {exc}")
        pytest.skip(str(exc))
    return server
