"""``/healthz`` and the server's life, through a real aiohttp server on an ephemeral port and a
real (migrated SQLite) database; only the Discord client is a stub with the same three reads."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot import clock
from bot.config import Settings, load_settings
from bot.db import migrate, presence
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import WorkerHeartbeat
from bot.errors import ConfigError
from bot.http.health import HealthCheck
from bot.http.server import http_server, listening, make_app
from bot.jobs import heartbeat
from bot.jobs.capabilities import Capabilities
from bot.metrics import Scrape

HEALTH_LOG = "bot.http.health"


@dataclass
class Gateway:
    """Stands in for ``discord.Client``: what the health check and the scrape read."""

    ready: bool = True
    closed: bool = False
    latency: float = 0.042

    def is_ready(self) -> bool:
        return self.ready

    def is_closed(self) -> bool:
        return self.closed


@pytest.fixture
async def engine(sqlite_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(sqlite_url)
    await migrate.upgrade(engine)
    yield engine
    await engine.dispose()


@dataclass
class Server:
    engine: AsyncEngine
    gateway: Gateway
    url: str

    async def get(self, path: str) -> tuple[int, dict[str, object]]:
        async with aiohttp.ClientSession() as client, client.get(self.url + path) as response:
            return response.status, json.loads(await response.text())


@pytest.fixture
async def server(engine: AsyncEngine) -> AsyncIterator[Server]:
    gateway = Gateway()
    reads = make_sessionmaker(engine, read_only=True)
    app = make_app(HealthCheck(gateway, reads), Scrape(reads, gateway))
    async with listening(app, "127.0.0.1", 0) as port:
        yield Server(engine, gateway, f"http://127.0.0.1:{port}")


async def test_healthy_counts_only_workers_seen_lately(server: Server) -> None:
    sessions = make_sessionmaker(server.engine)
    await heartbeat.beat(sessions, "cpu-1", Capabilities())
    await heartbeat.beat(sessions, "gpu-1", Capabilities(True, "NVIDIA H200", 143_000))
    async with sessions() as session, session.begin():
        last = clock.now() - timedelta(seconds=presence.RECENT_S + 5)
        session.add(WorkerHeartbeat(name="gone", host="h", started_at=last, last_seen_at=last))
    assert await server.get("/healthz") == (
        200,
        {"status": "ok", "discord": "ok", "database": "ok", "workers": 2},
    )


async def test_no_worker_is_reported_but_not_a_failure(server: Server) -> None:
    status, body = await server.get("/healthz")
    assert (status, body["status"], body["workers"]) == (200, "ok", 0)


@pytest.mark.parametrize(
    ("gateway", "reason"),
    [
        (Gateway(ready=False), "not ready"),
        (Gateway(closed=True), "closed"),
        (Gateway(latency=float("inf")), "not connected (no heartbeat acknowledged)"),
        (Gateway(latency=float("nan")), "not connected (no heartbeat acknowledged)"),
    ],
)
async def test_discord_not_connected_is_503_naming_discord(
    server: Server, gateway: Gateway, reason: str
) -> None:
    server.gateway.ready, server.gateway.closed = gateway.ready, gateway.closed
    server.gateway.latency = gateway.latency
    assert await server.get("/healthz") == (
        503,
        {
            "status": "failing",
            "discord": reason,
            "database": "ok",
            "workers": 0,
            "failing": ["discord"],
        },
    )


async def test_database_gone_is_503_naming_the_database(
    server: Server, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    database = Path(sqlite_url.removeprefix("sqlite+aiosqlite:///"))
    for path in database.parent.glob(database.name + "*"):  # with its -wal and -shm
        path.unlink()
    await server.engine.dispose()  # no pooled connection keeps the removed file open
    with caplog.at_level(logging.INFO, logger=HEALTH_LOG):
        status, body = await server.get("/healthz")
    assert (status, body["failing"], body["discord"], body["workers"]) == (
        503,
        ["database"],
        "ok",
        None,
    )
    assert body["database"] == "unavailable"
    (logged,) = caplog.records
    assert logged.levelno == logging.WARNING
    assert "no such table: worker_heartbeats" in logged.getMessage()


@dataclass
class Flaky:
    """The read sessionmaker of a database that fails as a driver does while ``failing``."""

    reads: async_sessionmaker[AsyncSession]
    message: str
    failing: bool = True

    def __call__(self) -> AsyncSession:
        if self.failing:
            raise OperationalError("SELECT count(*) ...", {}, Exception(self.message))
        return self.reads()


async def test_the_drivers_message_goes_to_the_log_not_to_the_caller(
    engine: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    canary = f"canary-{secrets.token_hex(8)}"
    real = make_sessionmaker(engine, read_only=True)
    flaky = Flaky(real, f'password authentication failed for user "{canary}" at db.internal:5432')
    reads: async_sessionmaker[AsyncSession] = flaky  # type: ignore[assignment]
    app = make_app(HealthCheck(Gateway(), reads), Scrape(real, Gateway()))
    with caplog.at_level(logging.INFO, logger=HEALTH_LOG):
        async with listening(app, "127.0.0.1", 0) as port:
            url = f"http://127.0.0.1:{port}/healthz"
            print("ATTACK: anyone asks /healthz while the database fails with a telling message")
            bodies = [await _get_text(url) for _ in range(3)]
            flaky.failing = False  # the database is back
            recovered = await _get_text(url)
            flaky.failing = True  # and fails again
            again = await _get_text(url)
    for status, text in [*bodies, again]:
        print(status, text)
        assert status == 503 and canary not in text
        assert json.loads(text)["database"] == "unavailable"
    assert recovered[0] == 200 and json.loads(recovered[1])["database"] == "ok"
    # one line per change of state: failing (its message in full), answering, failing again
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in lines] == [logging.WARNING, logging.INFO, logging.WARNING]
    assert canary in lines[0][1] and canary in lines[2][1]


async def _get_text(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as client, client.get(url) as response:
        return response.status, await response.text()


class Hanging:
    """A sessionmaker whose session never opens: a database that does not answer."""

    async def __aenter__(self) -> AsyncSession:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def __aexit__(self, *exc: object) -> None:
        return None


async def test_a_database_that_does_not_answer_fails_within_the_timeout() -> None:
    reads: async_sessionmaker[AsyncSession] = Hanging  # type: ignore[assignment]
    loop = asyncio.get_running_loop()
    started = loop.time()
    report = await HealthCheck(Gateway(), reads, timeout_s=0.2).report()
    assert (report.database, report.failing) == ("timeout", ("database",))
    assert loop.time() - started < 5


def _settings(port: int) -> Settings:
    return Settings(_env_file=None, http_host="127.0.0.1", http_port=port)  # type: ignore[call-arg]


async def test_the_server_runs_on_the_configured_port_and_stops(engine: AsyncEngine) -> None:
    with socket.socket() as probe:  # a port free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    reads = make_sessionmaker(engine, read_only=True)
    gateway = Gateway()
    async with http_server(_settings(port), HealthCheck(gateway, reads), Scrape(reads, gateway)):
        url = f"http://127.0.0.1:{port}/healthz"
        async with aiohttp.ClientSession() as client, client.get(url) as response:
            assert response.status == 200
    with pytest.raises(aiohttp.ClientConnectorError):
        async with aiohttp.ClientSession() as client, client.get(url):
            pass


async def test_port_zero_turns_the_server_off(engine: AsyncEngine) -> None:
    reads = make_sessionmaker(engine, read_only=True)
    async with http_server(
        _settings(0), HealthCheck(Gateway(), reads), Scrape(reads, Gateway())
    ) as port:
        assert port is None


async def test_a_port_in_use_fails_the_start_naming_http_port(engine: AsyncEngine) -> None:
    reads = make_sessionmaker(engine, read_only=True)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError) as raised:
            async with http_server(
                _settings(port), HealthCheck(Gateway(), reads), Scrape(reads, Gateway())
            ):
                raise AssertionError("started on a port in use")
    assert str(raised.value).startswith(f"HTTP_PORT: cannot listen on 127.0.0.1:{port} (")
    assert "HTTP_PORT=0 to turn this listener off" in str(raised.value)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("HTTP_PORT", "70000"), ("HTTP_PORT", "-1"), ("HTTP_PORT", "web"), ("HTTP_HOST", "")],
)
def test_bad_http_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as raised:
        load_settings(env_file=None)
    assert str(raised.value).startswith(f"invalid setting {variable}: ")


def test_http_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTTP_HOST", raising=False)
    monkeypatch.delenv("HTTP_PORT", raising=False)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (settings.http_host, settings.http_port) == ("127.0.0.1", 8080)
