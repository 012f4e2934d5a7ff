"""The database goes away under the running bot, as an operator meets it: ``brrrbot run``
against the loopback Discord on a PostgreSQL server of the test's own, stopped (``pg_ctl stop
-m fast``: its connections terminated, then connects refused) and started again.

Each test first proves the outage (a connect refused), then checks what the issue asks: a
member's command is answered within Discord's 3 s in clear words; every background loop logs
one WARNING when the database goes and one INFO when it returns, no traceback; the presence
row is fresh again after; ``/healthz`` is 503 with no driver text, then 200; SIGTERM during
an outage exits 0 without blaming Discord.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from bot.db.engine import SQLITE_BUSY_TIMEOUT_MS
from bot.outage import UNAVAILABLE_REPLY
from tests.outages import held_write_lock, refused, stopped_server
from tests.postgres_server import PostgresServer, started_postgres
from tests.system.conftest import Backend, System, start_system, until

#: the presence beat is every 10 s: a loop's warning or recovery may take one beat to show
BEAT_WAIT_S = 25.0


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server this test alone stops and starts (the suite's is shared)."""
    server = started_postgres()
    try:
        yield server
    finally:
        server.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _healthz(port: int) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            f"http://127.0.0.1:{port}/healthz", timeout=aiohttp.ClientTimeout(total=5)
        ) as response,
    ):
        return response.status, await response.text()


def _alive_at(system: System) -> datetime | None:
    rows = system.query("SELECT updated_at FROM bot_state WHERE key = ?", "bot.alive")
    if not rows:
        return None
    value = rows[0][0]
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _per_loop(output: str, words: str) -> collections.Counter[str]:
    """How often each loop logged ``<loop>: <words>``."""
    return collections.Counter(
        re.findall(rf"bot\.background: ([\w-]+): {re.escape(words)}", output)
    )


async def test_an_outage_is_said_once_answered_clearly_and_survived_then_a_clean_stop(
    tmp_path: Path, own_server: PostgresServer
) -> None:
    http_port = _free_port()
    url = await own_server.create_database(migrated=False)
    async with start_system(
        tmp_path, Backend("postgresql", url), HTTP_PORT=str(http_port)
    ) as system:
        bot = await system.start_bot()
        await until(lambda: _alive_at(system), 30, "the bot's first beat")
        await until(lambda: _healthz_sync_status(http_port) == 200, 30, "a healthy bot")
        member = system.learner()

        async with stopped_server(own_server):
            handle = await system.submit(member)
            assert await handle.acked() < 3.0
            reply = await handle.original(timeout=3.0)
            assert reply.content == UNAVAILABLE_REPLY
            status, body = await _healthz(http_port)
            assert status == 503 and '"database": "unavailable"' in body, body
            assert "Errno" not in body and "Connect call" not in body, body
            await until(
                lambda: "bot-presence: database unavailable" in bot.output,
                BEAT_WAIT_S,
                "the presence loop to say the database is unavailable",
            )
        back = datetime.now(UTC)
        assert not await refused(own_server)

        def fresh() -> bool:
            seen = _alive_at(system)
            return seen is not None and seen >= back - timedelta(seconds=1)

        await until(fresh, BEAT_WAIT_S, "the presence row fresh again after the outage")
        away = _per_loop(bot.output, "database unavailable")
        await until(
            lambda: (
                _per_loop(bot.output, "database available again")
                == collections.Counter(dict.fromkeys(away, 1))
            ),
            BEAT_WAIT_S,
            f"one recovery line for each loop that saw the outage ({dict(away)})",
        )
        assert away and set(away.values()) == {1}, away
        assert "Traceback" not in bot.output, bot.output[-3000:]
        await until(lambda: _healthz_sync_status(http_port) == 200, 10, "healthy again")
        after = await system.submit(member)
        assert (await after.original(timeout=10)).content.startswith("Queued")

        # a second outage, and the operator stops the bot during it
        async with stopped_server(own_server):
            await until(
                lambda: _healthz_sync_status(http_port) == 503,
                10,
                "the health check to see the second outage",
            )
            assert bot.pid is not None
            sent = time.monotonic()
            os.kill(bot.pid, signal.SIGTERM)
            await until(lambda: bot.returncode is not None, 15, "the bot to exit on SIGTERM")
            assert time.monotonic() - sent < 10.0
        await system.stop_bot()
        assert bot.returncode == 0, bot.output[-3000:]
        assert "cannot reach Discord" not in bot.output, bot.output[-3000:]


def _healthz_sync_status(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=3) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


async def test_sqlite_locked_past_the_busy_timeout_refuses_clearly_and_loses_nothing(
    tmp_path: Path,
) -> None:
    """Another process holds SQLite's write lock longer than the bot's busy timeout while a
    member submits: the command is acknowledged within 3 s, then refused in the clear words
    (no row half-written); once the lock lifts, submissions are queued again."""
    async with start_system(tmp_path) as system:
        bot = await system.start_bot()
        await until(lambda: _alive_at(system), 30, "the bot's first beat")
        member = system.learner()
        async with held_write_lock(system.database):  # proved held before the block runs
            handle = await system.submit(member)
            assert await handle.acked() < 3.0
            reply = await handle.original(timeout=SQLITE_BUSY_TIMEOUT_MS / 1000 + 10)
            assert reply.content == UNAVAILABLE_REPLY
            assert system.query("SELECT count(*) FROM submissions") == [(0,)]
        after = await system.submit(member)
        assert (await after.original(timeout=15)).content.startswith("Queued")
        assert system.query("SELECT count(*) FROM submissions") == [(1,)]
        away = _per_loop(bot.output, "database unavailable")
        await until(
            lambda: (
                _per_loop(bot.output, "database available again")
                == collections.Counter(dict.fromkeys(away, 1))
            ),
            BEAT_WAIT_S,
            f"one recovery line for each loop that saw the lock ({dict(away)})",
        )
        assert set(away.values()) <= {1}, away
        assert "Traceback" not in bot.output, bot.output[-3000:]
        assert bot.pid is not None
        os.kill(bot.pid, signal.SIGTERM)
        await until(lambda: bot.returncode is not None, 15, "the bot to exit on SIGTERM")
        await system.stop_bot()
        assert bot.returncode == 0, bot.output[-3000:]
