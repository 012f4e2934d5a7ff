"""A PostgreSQL server that does not answer at all (its host gone, its packets dropped) is an
outage after a few seconds, not after asyncpg's default minute: a member's command or a
worker's verdict waits that long at most before the outage is reported and retried."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from bot.db.engine import CONNECT_TIMEOUT_S, make_engine
from bot.outage import is_database_unavailable


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that takes TCP connections into its backlog and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield int(listener.getsockname()[1])


async def test_a_server_that_never_answers_is_an_outage_within_the_connect_timeout(
    silent_port: int,
) -> None:
    engine = make_engine(f"postgresql+asyncpg://brrrbot@127.0.0.1:{silent_port}/brrrbot")
    started = time.monotonic()
    try:
        with pytest.raises(Exception) as raised:
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
    finally:
        await engine.dispose()
    waited = time.monotonic() - started
    assert is_database_unavailable(raised.value), repr(raised.value)
    # the connect's own timeout, not the test's: well under asyncpg's default of 60 s
    assert CONNECT_TIMEOUT_S - 0.5 <= waited < CONNECT_TIMEOUT_S + 5, waited
