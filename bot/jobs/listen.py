"""LISTEN on a PostgreSQL channel: how one process learns at once what another committed.

``enqueue`` NOTIFYs ``queue.JOBS_CHANNEL`` (idle workers listen: ``bot.worker.wakeup``) and
``complete`` NOTIFYs ``queue.VERDICTS_CHANNEL`` (the bot's delivery listens); a notification
is sent at its transaction's commit, so nobody is woken for a row they cannot see yet.  The
listening connection is one of the engine's, held while inside ``listening``.  Other backends
have no notifications: there ``listening`` does nothing, and the listener relies on its poll.
A notification lost with a dropped connection is covered the same way, by the poll.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)


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
    connection = await engine.connect()
    try:
        raw = await connection.get_raw_connection()
        await raw.driver_connection.add_listener(channel, _callback(notified))
        yield True
    finally:
        with contextlib.suppress(Exception):  # closing a connection the server dropped
            await connection.close()


def _callback(notified: Callable[[], None]) -> Callable[..., None]:
    def on_notification(*_args: Any) -> None:
        notified()

    return on_notification
