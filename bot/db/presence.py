"""Who is using the database: the bot's beat in ``bot_state`` and the workers' heartbeats.

``brrrbot db restore`` must not swap the file under a running process: it would go on
writing into the replaced file, and those writes would be lost.  Workers already beat in
``worker_heartbeats``; the bot beats here, every ``BEAT_S``, under ``KEY``, and deletes its
row when it stops cleanly.  Liveness between processes is wall-clock time (``utcnow``, as
worker heartbeats), not ``bot.clock``, which a test harness may move.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import delete, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.background import PassLoop, RetryPolicy
from bot.db.dialect import upsert
from bot.db.models import BotState, WorkerHeartbeat
from bot.db.types import utcnow
from bot.errors import DatabaseError
from bot.outage import describe, is_database_unavailable

log = logging.getLogger(__name__)

KEY = "bot.alive"
#: how often the bot and each worker beat, in seconds
BEAT_S = 10.0
#: a process not seen for this long is presumed gone: three beats.  A live process's row is at
#: most one beat plus one slow write old (a beat may wait up to SQLite's 15 s busy timeout for
#: the write lock), about 25 s; a killed worker's row stops counting 30 s after its last beat.
RECENT_S = 3 * BEAT_S
#: a failed beat waits for the next one, however long the database is away
RETRIES = RetryPolicy(first_delay_s=BEAT_S, max_delay_s=BEAT_S)


@dataclass(frozen=True)
class User:
    """A process seen using the database lately."""

    kind: Literal["bot", "worker"]
    name: str
    last_seen_at: datetime

    def describe(self, now: datetime) -> str:
        seconds = max(0, round((now - self.last_seen_at).total_seconds()))
        return f"the {self.kind} {self.name} (seen {seconds} s ago)"


async def beat(sessions: async_sessionmaker[AsyncSession]) -> None:
    """Say the bot is alive; the value names this process for whoever reads it."""
    now = utcnow()
    who = f"pid {os.getpid()} on {socket.gethostname()}"
    async with sessions() as session, session.begin():
        statement = upsert(session, BotState).values(key=KEY, value=who, updated_at=now)
        await session.execute(
            statement.on_conflict_do_update(
                index_elements=[BotState.key], set_={"value": who, "updated_at": now}
            )
        )


async def forget(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as session, session.begin():
        await session.execute(delete(BotState).where(BotState.key == KEY))


@contextlib.asynccontextmanager
async def beating(sessions: async_sessionmaker[AsyncSession]) -> AsyncIterator[None]:
    """Beat every ``BEAT_S`` while the body runs; forget the beat when it ends.

    The loop (a ``bot.background.PassLoop``) is stopped between beats, never cancelled inside
    one: a write cut off mid-way would leave its pooled connection to be reset under a
    cancellation.  A beat that fails (the database busy or away a while, driver exceptions
    included) is tried again a beat later, however long the outage lasts: the loop logs one
    warning when the database goes away and one line when it returns.  A beat that cannot be
    forgotten at the end (the database still away) is logged, not raised: the stop stays clean.
    """
    loop = PassLoop("bot-presence", lambda: beat(sessions), idle_s=BEAT_S, retries=RETRIES)
    loop.start()
    try:
        yield
    finally:
        await loop.stop()
        try:
            await forget(sessions)
        except (SQLAlchemyError, DatabaseError, OSError) as exc:
            if not isinstance(exc, SQLAlchemyError | DatabaseError) and not (
                is_database_unavailable(exc)
            ):
                raise
            # a stale row also stops counting after RECENT_S
            log.warning("the bot's presence row stays (%s)", describe(exc))


async def users(session: AsyncSession, now: datetime) -> list[User]:
    """The bot and the workers that beat within ``RECENT_S`` of ``now``."""
    since = now - timedelta(seconds=RECENT_S)
    bots = await session.execute(
        select(BotState.value, BotState.updated_at).where(
            BotState.key == KEY, BotState.updated_at >= since
        )
    )
    workers = await session.execute(
        select(WorkerHeartbeat.name, WorkerHeartbeat.host, WorkerHeartbeat.last_seen_at)
        .where(WorkerHeartbeat.last_seen_at >= since)
        .order_by(WorkerHeartbeat.name)
    )
    return [
        *(User("bot", f"({who})", seen) for who, seen in bots),
        *(User("worker", f"{name} on {host}", seen) for name, host, seen in workers),
    ]
