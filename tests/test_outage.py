"""``bot.outage.is_database_unavailable``: real errors, raised by the real drivers."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import aiohttp
import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import create_async_engine

from bot.errors import ServiceUnavailable
from bot.outage import describe, is_database_unavailable
from bot.runner import _attribute
from bot.shutdown import Shutdown


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # free again once closed: nothing listens there


async def test_a_refused_postgres_connect_is_an_outage_though_it_is_a_raw_oserror() -> None:
    engine = create_async_engine(f"postgresql+asyncpg://x@127.0.0.1:{_closed_port()}/x")
    try:
        with pytest.raises(OSError) as raised:
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
    finally:
        await engine.dispose()
    assert not isinstance(raised.value, OperationalError)  # the driver's own, unwrapped
    assert is_database_unavailable(raised.value)
    assert describe(raised.value).startswith("ConnectionRefusedError")


async def test_the_same_refused_connect_to_discord_is_not_the_database() -> None:
    async with aiohttp.ClientSession() as http:
        with pytest.raises(OSError) as raised:
            await http.get(f"http://127.0.0.1:{_closed_port()}/")
    assert not is_database_unavailable(raised.value)
    assert not is_database_unavailable(ConnectionRefusedError(111, "raised by our own code"))


async def test_a_sqlite_write_lock_held_past_the_busy_timeout_is_an_outage(
    tmp_path: Path,
) -> None:
    path = tmp_path / "held.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN IMMEDIATE")  # another process's write lock, held
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}", connect_args={"timeout": 0})
    try:
        with pytest.raises(OperationalError) as raised:
            async with engine.begin() as connection:
                await connection.execute(text("INSERT INTO t VALUES (1)"))
    finally:
        await engine.dispose()
        holder.close()
    assert "locked" in str(raised.value)
    assert is_database_unavailable(raised.value)


async def test_a_terminated_postgres_connection_is_an_outage() -> None:
    assert is_database_unavailable(asyncpg.exceptions.AdminShutdownError("terminating"))
    assert is_database_unavailable(asyncpg.exceptions.ConnectionDoesNotExistError("closed"))
    assert is_database_unavailable(asyncpg.exceptions.CannotConnectNowError("starting up"))


async def test_a_broken_rule_or_a_bug_is_not_an_outage(tmp_path: Path) -> None:
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'rules.sqlite3'}")
    try:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE t (x INTEGER PRIMARY KEY)"))
            await connection.execute(text("INSERT INTO t VALUES (1)"))
        with pytest.raises(IntegrityError) as raised:
            async with engine.begin() as connection:
                await connection.execute(text("INSERT INTO t VALUES (1)"))
    finally:
        await engine.dispose()
    assert not is_database_unavailable(raised.value)
    try:
        try:
            raise ConnectionRefusedError(111, "refused")
        except OSError:
            raise KeyError("a bug met while handling it") from None
    except KeyError as bug:
        assert not is_database_unavailable(bug)


def test_a_missing_sqlite_table_is_not_an_outage() -> None:
    connection = sqlite3.connect(":memory:")
    with pytest.raises(sqlite3.OperationalError) as raised:
        connection.execute("SELECT * FROM nowhere")
    wrapped = OperationalError("SELECT * FROM nowhere", {}, raised.value)
    assert not is_database_unavailable(wrapped)


async def test_the_runner_blames_the_database_not_discord_and_a_stop_stays_clean() -> None:
    """``bot.runner`` attributes what ended it: a refused database connect is the database's
    (and, after a signal, no failure at all: exit 0); an unreachable Discord is Discord's."""
    engine = create_async_engine(f"postgresql+asyncpg://x@127.0.0.1:{_closed_port()}/x")
    try:
        with pytest.raises(OSError) as raised:
            async with engine.connect():
                pass
    finally:
        await engine.dispose()
    database_down = raised.value
    async with aiohttp.ClientSession() as http:
        with pytest.raises(OSError) as raised:
            await http.get(f"http://127.0.0.1:{_closed_port()}/")
    discord_down = raised.value

    running = Shutdown()
    with pytest.raises(ServiceUnavailable, match="the database is unavailable") as blamed:
        _attribute(database_down, running)
    assert "Discord" not in str(blamed.value)
    with pytest.raises(ServiceUnavailable, match="cannot reach Discord"):
        _attribute(discord_down, running)
    stopping = Shutdown()
    stopping.signal_name = "SIGTERM"
    _attribute(database_down, stopping)  # returns: the stop was asked for, exit 0
    with pytest.raises(KeyError):
        _attribute(KeyError("a bug"), stopping)
