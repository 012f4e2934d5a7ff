"""``/healthz``: is this bot process doing its job?

Healthy means both parts the bot cannot work without answer: the Discord gateway is
connected (ready, not closed, a finite heartbeat latency) and the database answers a query
on a real table within ``DATABASE_TIMEOUT_S`` (a removed SQLite file would open as an empty
one, so ``SELECT 1`` alone would pass).

Live workers are reported but never make the bot unhealthy: in compose the worker container
starts only once the bot is healthy, so failing on "no worker" would keep it from ever
starting; a local pool is already restarted by the bot itself (``PoolSupervisor``); and a
member who submits while no capable worker is around is told so at once.  An orchestrator
restarting the bot would fix none of these.

Anyone who reaches the port may ask, so a failing database is only ``unavailable`` (or
``timeout``) in the answer: the driver's message can name hosts, users, paths or schema.  It
goes to the log instead, at warning level, once each time the state changes, not on every probe
of a healthcheck that asks every few seconds.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot import clock
from bot.jobs import heartbeat

log = logging.getLogger(__name__)

OK = "ok"
UNAVAILABLE = "unavailable"
TIMEOUT = "timeout"
DATABASE_TIMEOUT_S = 2.0


class GatewayState(Protocol):
    """What the check reads of the Discord client (``discord.Client`` has all three)."""

    def is_ready(self) -> bool: ...

    def is_closed(self) -> bool: ...

    @property
    def latency(self) -> float: ...


@dataclass(frozen=True)
class HealthReport:
    """Each part is ``"ok"`` or why it is not; ``workers`` is None when the database failed."""

    discord: str
    database: str
    workers: int | None

    @property
    def failing(self) -> tuple[str, ...]:
        return tuple(
            name
            for name, state in (("discord", self.discord), ("database", self.database))
            if state != OK
        )

    @property
    def healthy(self) -> bool:
        return not self.failing

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {
            "status": OK if self.healthy else "failing",
            "discord": self.discord,
            "database": self.database,
            "workers": self.workers,
        }
        if not self.healthy:
            body["failing"] = list(self.failing)
        return body


class HealthCheck:
    """Builds a ``HealthReport`` from the client and the database, on request."""

    def __init__(
        self,
        gateway: GatewayState,
        reads: async_sessionmaker[AsyncSession],
        timeout_s: float = DATABASE_TIMEOUT_S,
    ) -> None:
        self.gateway = gateway
        self.reads = reads
        self.timeout_s = timeout_s
        self._database = OK  # the state last reported, so the log has one line per change

    async def report(self) -> HealthReport:
        try:
            async with asyncio.timeout(self.timeout_s), self.reads() as session:
                workers = await heartbeat.live_workers(session, clock.now())
        except TimeoutError:
            self._changed(TIMEOUT, f"no answer within {self.timeout_s:g} s")
            return HealthReport(self._discord(), TIMEOUT, None)
        except Exception as exc:  # any driver error: the log has it, the caller does not
            self._changed(UNAVAILABLE, f"{type(exc).__name__}: {exc}")
            return HealthReport(self._discord(), UNAVAILABLE, None)
        self._changed(OK, "")
        return HealthReport(self._discord(), OK, workers)

    def _changed(self, state: str, why: str) -> None:
        if state == self._database:
            return
        self._database = state
        if state == OK:
            log.info("health check: the database answers again")
        else:
            log.warning("health check: the database is %s: %s", state, why)

    def _discord(self) -> str:
        if self.gateway.is_closed():
            return "closed"
        if not self.gateway.is_ready():
            return "not ready"
        if not math.isfinite(self.gateway.latency):
            return "not connected (no heartbeat acknowledged)"
        return OK
