"""How an idle worker learns that a job arrived.

On PostgreSQL a worker LISTENs on ``queue.JOBS_CHANNEL`` and ``enqueue`` NOTIFYs it,
so a new job reaches an idle worker within milliseconds without hammering the
server; polling remains as a slow fallback in case a notification is lost with a
dropped connection.  SQLite has no notifications, and its reads are cheap local
file reads, so workers poll it briefly instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from sqlalchemy.ext.asyncio import AsyncEngine

from bot.jobs.listen import can_listen, listening
from bot.jobs.queue import JOBS_CHANNEL

log = logging.getLogger(__name__)

SQLITE_POLL_S = 0.02
#: with LISTEN, polling only covers a notification lost to a dropped connection
POSTGRES_POLL_S = 2.0


class Wakeup:
    """``await wait()`` returns when a job may be waiting, or after the poll interval."""

    def __init__(self, engine: AsyncEngine, poll_s: float | None = None) -> None:
        self.engine = engine
        self.listening = can_listen(engine)
        default = POSTGRES_POLL_S if self.listening else SQLITE_POLL_S
        self.poll_s = default if poll_s is None else poll_s
        self._event = asyncio.Event()
        self._exit = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Wakeup:
        if await self._exit.enter_async_context(
            listening(self.engine, JOBS_CHANNEL, self._event.set)
        ):
            log.info("listening for new jobs on channel %s", JOBS_CHANNEL)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._exit.aclose()

    async def wait(self, stop: asyncio.Event) -> None:
        """Until a notification, ``stop``, or the poll interval, whichever comes first."""
        stopping = asyncio.ensure_future(stop.wait())
        notified = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait(
                {stopping, notified}, timeout=self.poll_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stopping.cancel()
            notified.cancel()
        self._event.clear()
