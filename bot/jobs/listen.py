"""LISTEN on a PostgreSQL channel: how one process learns at once what another committed.

``enqueue`` NOTIFYs ``queue.JOBS_CHANNEL`` (idle workers listen: ``bot.worker.wakeup``) and
``complete`` NOTIFYs ``queue.VERDICTS_CHANNEL`` (the bot's delivery listens); a notification
is sent at its transaction's commit, so nobody is woken for a row they cannot see yet.  The
listening connection is one of the engine's, held while inside ``listening``.  Other backends
have no notifications: there ``listening`` does nothing, and the listener relies on its poll.

When the server drops the connection (a restart, ``pg_terminate_backend``, an outage) it is
re-established, retrying by ``RECONNECTS``; meanwhile the listener's poll covers, and once
listening again ``notified()`` is called once, for whatever was committed while nobody
listened.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.background import Backoff, RetryPolicy
from bot.outage import is_database_unavailable

log = logging.getLogger(__name__)

#: a dropped listening connection is re-opened after 0.1 s, doubling to 1 s while it fails
RECONNECTS = RetryPolicy(first_delay_s=0.1, max_delay_s=1.0)
#: how often the listening connection is looked at (a dropped one is noticed within this)
CHECK_S = 0.5


def can_listen(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "postgresql"


@contextlib.asynccontextmanager
async def listening(
    engine: AsyncEngine, channel: str, notified: Callable[[], None]
) -> AsyncIterator[bool]:
    """Call ``notified()`` on each notification on ``channel`` while inside; yields whether
    it listens (False on a backend without notifications)."""
    if not can_listen(engine):
        yield False
        return
    listener = _Listener(engine, channel, notified)
    await listener.connect()  # the first connect's failure is the caller's
    keeping = asyncio.create_task(listener.keep(), name=f"listen {channel}")
    try:
        yield True
    finally:
        keeping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeping
        await listener.close()


class _Listener:
    def __init__(self, engine: AsyncEngine, channel: str, notified: Callable[[], None]) -> None:
        self.engine = engine
        self.channel = channel
        self.notified = notified
        self.connection: AsyncConnection | None = None
        self.driver: Any = None

    async def connect(self) -> None:
        connection = await self.engine.connect()
        try:
            raw = await connection.get_raw_connection()
            await raw.driver_connection.add_listener(self.channel, _callback(self.notified))
        except BaseException:
            with contextlib.suppress(Exception):
                await connection.close()
            raise
        self.connection, self.driver = connection, raw.driver_connection

    def lost(self) -> bool:
        return self.driver is None or self.driver.is_closed()

    async def keep(self) -> None:
        """Re-establish the connection whenever it is found dropped."""
        while True:
            await asyncio.sleep(CHECK_S)
            if not self.lost():
                continue
            log.warning("the LISTEN connection on %s was dropped; reconnecting", self.channel)
            await self.close()
            backoff = Backoff(RECONNECTS)
            while True:
                try:
                    await self.connect()
                    break
                except Exception as exc:
                    if not is_database_unavailable(exc):
                        raise
                    await asyncio.sleep(backoff.delay())
            log.info("listening on %s again", self.channel)
            self.notified()  # for anything committed while nobody listened

    async def close(self) -> None:
        connection, self.connection, self.driver = self.connection, None, None
        if connection is None:
            return
        with contextlib.suppress(Exception):  # closing a connection the server dropped
            await connection.invalidate()
        with contextlib.suppress(Exception):
            await connection.close()


def _callback(notified: Callable[[], None]) -> Callable[..., None]:
    def on_notification(*_args: Any) -> None:
        notified()

    return on_notification
