"""Taking the database away from a running bot, as an operator's bad day does, each way
proved before the test goes on: another process holds SQLite's write lock (a probe cannot
take it), or the PostgreSQL server is stopped (a connect is refused)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from tests.postgres_server import PostgresServer

HOLD_LOCK = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
connection.execute("ROLLBACK")
"""


@contextlib.asynccontextmanager
async def held_write_lock(database: Path) -> AsyncIterator[None]:
    """Another process holds ``database``'s write lock until the block ends."""
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLD_LOCK,
        str(database),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert (await asyncio.wait_for(holder.stdout.readline(), 30)) == b"held\n"
        probe = sqlite3.connect(database, isolation_level=None, timeout=0)
        try:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                probe.execute("BEGIN IMMEDIATE")  # the lock really is held
        finally:
            probe.close()
        yield
    finally:
        holder.stdin.close()
        await asyncio.wait_for(holder.wait(), 30)


async def refused(server: PostgresServer) -> bool:
    """Whether ``server`` refuses a new connection now."""
    try:
        connection = await asyncpg.connect(
            host="127.0.0.1", port=server.port, user="postgres", database="postgres", timeout=5
        )
    except OSError:
        return True
    await connection.close()
    return False


@contextlib.asynccontextmanager
async def stopped_server(server: PostgresServer) -> AsyncIterator[None]:
    """``server`` is stopped (its connections terminated) until the block ends."""
    await asyncio.to_thread(server.pause)
    try:
        assert await refused(server), "the server still accepts connections"
        yield
    finally:
        await asyncio.to_thread(server.resume)
