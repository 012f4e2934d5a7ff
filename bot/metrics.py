"""Prometheus metrics of the bot process, in a registry of its own.

Two kinds: counters and a histogram the code increments as things happen (``METRICS``), and
values read at scrape time (``Scrape``): the queue and the live workers from the database, and
the gateway latency from the client.  The scrape's queries walk index ranges the size of the
queue and of the fleet, never the history: jobs by final status are the verdict histogram's
counts by status (a GROUP BY over every job ever graded took 8 ms at 100k jobs and grows
with them).  The registry is not prometheus_client's global one, so nothing an imported
library registers leaks into ``/metrics`` and tests can read exact values.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot import clock
from bot.db.models import GradingJob, WorkerHeartbeat
from bot.db.presence import RECENT_S
from bot.db.states import ACTIVE, JobStatus

log = logging.getLogger(__name__)

#: seconds from submitting to the verdict reaching the member: grading takes under a second
#: to minutes, a queue behind a burst or a dead worker's lease adds more
VERDICT_BUCKETS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
#: the longest a scrape waits for the database before answering without its values
DATABASE_TIMEOUT_S = 2.0


class Metrics:
    """The counters and histogram the bot increments, in their own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.interactions = Counter(
            "brrrbot_interactions",
            "Interactions received from Discord, by kind and application command.",
            ["kind", "command"],
            registry=self.registry,
        )
        self.submit_to_verdict = Histogram(
            "brrrbot_submit_to_verdict_seconds",
            "Seconds from a submission to its verdict being delivered, by verdict status "
            "(passed, failed, error); its _count is the jobs by final status.",
            ["status"],
            buckets=VERDICT_BUCKETS,
            registry=self.registry,
        )
        self.delivery_failures = Counter(
            "brrrbot_delivery_failures",
            "Failed tries to settle (pay) or deliver a verdict; each is retried with backoff.",
            ["stage"],
            registry=self.registry,
        )

    def interaction(self, kind: str, command: str) -> None:
        self.interactions.labels(kind, command).inc()

    def verdict_delivered(self, status: str, submitted_at: datetime, now: datetime) -> None:
        self.submit_to_verdict.labels(status).observe((now - submitted_at).total_seconds())

    def delivery_failed(self, stage: str) -> None:
        self.delivery_failures.labels(stage).inc()


#: the process's metrics: the code that counts and ``/metrics`` share it
METRICS = Metrics()


class GatewayLatency(Protocol):
    """What the scrape reads of the Discord client."""

    @property
    def latency(self) -> float: ...


@dataclass(frozen=True)
class LiveWorkers:
    device: str  # "cpu" | "cuda"
    gpu: str  # the GPU's name; "" on a CPU worker
    count: int


@dataclass(frozen=True)
class QueueState:
    """What the database says at scrape time."""

    queued: int
    running: int
    workers: tuple[LiveWorkers, ...]


async def read_queue_state(session: AsyncSession, now: datetime) -> QueueState:
    """Queued and running jobs (a range of the (status, available_at) index: as many entries
    as the queue holds) and workers seen within ``RECENT_S`` by device (the last_seen_at
    index of a fleet-sized table)."""
    counted = await session.execute(
        select(GradingJob.status, func.count())
        .where(GradingJob.status.in_(ACTIVE))
        .group_by(GradingJob.status)
    )
    jobs: dict[JobStatus, int] = {status: count for status, count in counted}
    seen = await session.execute(
        select(WorkerHeartbeat.cuda, WorkerHeartbeat.gpu_name, func.count())
        .where(WorkerHeartbeat.last_seen_at >= now - timedelta(seconds=RECENT_S))
        .group_by(WorkerHeartbeat.cuda, WorkerHeartbeat.gpu_name)
    )
    workers = tuple(
        LiveWorkers("cuda" if cuda else "cpu", gpu_name or "", count)
        for cuda, gpu_name, count in seen
    )
    return QueueState(jobs.get(JobStatus.QUEUED, 0), jobs.get(JobStatus.RUNNING, 0), workers)


class _Snapshot(Collector):
    """A collector over values already read, so rendering needs no I/O."""

    def __init__(self, state: QueueState | None, latency: float) -> None:
        self.state = state
        self.latency = latency

    def collect(self) -> Iterator[Metric]:
        latency = GaugeMetricFamily(
            "brrrbot_gateway_latency_seconds",
            "Discord gateway heartbeat latency; NaN or +Inf while not connected.",
        )
        latency.add_metric([], self.latency)
        yield latency
        up = GaugeMetricFamily(
            "brrrbot_database_up", "1 when the database answered this scrape's queries, else 0."
        )
        up.add_metric([], 0.0 if self.state is None else 1.0)
        yield up
        if self.state is None:
            return
        depth = GaugeMetricFamily("brrrbot_queue_depth", "Grading jobs waiting for a worker.")
        depth.add_metric([], self.state.queued)
        yield depth
        running = GaugeMetricFamily(
            "brrrbot_jobs_running", "Grading jobs a worker holds (leased) right now."
        )
        running.add_metric([], self.state.running)
        yield running
        workers = GaugeMetricFamily(
            "brrrbot_workers_live",
            f"Grading workers that sent a heartbeat in the last {RECENT_S:g} s, by device.",
            labels=["device", "gpu"],
        )
        for live in self.state.workers:
            workers.add_metric([live.device, live.gpu], live.count)
        yield workers


class Scrape:
    """Renders ``/metrics``: the counters, then the values read now."""

    def __init__(
        self,
        reads: async_sessionmaker[AsyncSession],
        gateway: GatewayLatency,
        metrics: Metrics = METRICS,
    ) -> None:
        self.reads = reads
        self.gateway = gateway
        self.metrics = metrics

    async def render(self) -> bytes:
        """Prometheus text; when the database fails or is slow the counters still come,
        with ``brrrbot_database_up 0`` instead of the queue's values."""
        state: QueueState | None
        try:
            async with asyncio.timeout(DATABASE_TIMEOUT_S), self.reads() as session:
                state = await read_queue_state(session, clock.now())
        except Exception as exc:
            log.warning("metrics: the database did not answer: %s", exc)
            state = None
        snapshot = _Snapshot(state, self.gateway.latency)
        return generate_latest(self.metrics.registry) + generate_latest(snapshot)
