"""One grading worker: claim a job, grade it in the sandbox under a lease, write the verdict.

This process holds the database connection and the graders (trusted code); it
never runs learner code itself: that happens in the zygote's forked jobs.  It
grades from the job's spec alone (``bot.jobs.job_spec``): no quest files, no
second validation of the upload.  A job this worker cannot grade at all (no spec,
a spec too new, a grader it does not have) gets a final error verdict at once,
saying why, instead of being retried by worker after worker.

A database outage (a restart, a stopped server, SQLite's write lock held past the busy
timeout: ``bot.outage``) is ridden out, never exited on: the claim loop, the heartbeat and
the lease renewal retry by ``DATABASE_RETRIES`` (capped at 1 s, so the worker notices the
database's return within a second), and a computed verdict is kept and its write retried
until it is recorded (``queue.complete`` is idempotent and fenced by the claim, not the
clock).  One WARNING says the database went away, one INFO that it is back.  Since every
lease expired during a long outage while its worker lived on, for ``RECLAIM_GRACE_S`` after
the database returns this worker takes queued jobs only, leaving running ones to their owners,
who are writing their verdicts; a job whose worker really died is re-claimed after that.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from functools import cache
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.background import Backoff, RetryPolicy
from bot.db import presence
from bot.db.engine import make_sessionmaker
from bot.db.migrate import require_current
from bot.db.models import Submission
from bot.jobs import heartbeat, queue
from bot.jobs.capabilities import Capabilities, Peaks
from bot.jobs.job_spec import JobSpec, SpecProblem, UnreadableSpec
from bot.jobs.verdict_pipe import VerdictBell
from bot.logs import log_context
from bot.outage import is_database_unavailable
from bot.worker import peaks
from bot.worker.grade_job import SandboxRunner, grade_prepared
from bot.worker.wakeup import Wakeup
from graders.base import Verdict
from graders.registry import find

log = logging.getLogger(__name__)

T = TypeVar("T")

#: a database that does not answer is asked again after 0.1 s, doubling to 1 s
DATABASE_RETRIES = RetryPolicy(first_delay_s=0.1, max_delay_s=1.0)
#: after an outage, expired leases are left to their (living) owners this long: many times
#: ``DATABASE_RETRIES``' ceiling, so each owner has recorded its verdict or renewed by then
RECLAIM_GRACE_S = 10.0


class RetryableError(Exception):
    """Grading failed for a reason that is not the learner's: try another attempt."""


class Ungradable(Exception):
    """This worker can never grade the job; ``str(exc)`` says why, for the member and the
    moderators.  Retrying elsewhere would not help (every worker of this version agrees)."""


@cache
def worker_version() -> str:
    """The installed brrrbot version, named in verdicts this worker cannot give."""
    try:
        return importlib.metadata.version("brrrbot")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def gradable_spec(spec: JobSpec | UnreadableSpec) -> JobSpec:
    """The spec a claimed job carries, if this worker can grade it; else Ungradable."""
    version = worker_version()
    if isinstance(spec, UnreadableSpec):
        hint = (
            " A moderator can regrade it: a regrade queues it with a spec."
            if spec.problem is SpecProblem.MISSING
            else ""
        )
        raise Ungradable(
            f"the worker at version {version} cannot grade this job: {spec.message}.{hint}"
        )
    info = find(spec.grader)  # a name a grader had when the job was queued will do
    if info is None:
        raise Ungradable(
            f"this server's quest needs grader `{spec.grader}`, which the worker at version "
            f"{version} does not have. A moderator can upgrade the workers and then regrade it."
        )
    if spec.interface != info.interface:
        raise Ungradable(
            f"this server's quest expects grader `{spec.grader}` to call "
            f"{', '.join(spec.interface)}, but the worker at version {version} has it call "
            f"{', '.join(info.interface)}. A moderator can align the workers and the quest, "
            "then regrade it."
        )
    return spec


class DatabaseOutage:
    """This worker's view of the database's availability, shared by its loops: one WARNING
    when the database stops answering, one INFO when it answers again."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.down_since: float | None = None
        self.back_at: float | None = None

    def failed(self, error: BaseException, doing: str) -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
            log.warning(
                "worker %s: the database does not answer (%s: %s: %s); retrying every "
                "second at most, keeping any verdict in hand",
                self.name,
                doing,
                type(error).__name__,
                getattr(error, "orig", None) or error,
            )

    def answered(self) -> None:
        if self.down_since is not None:
            self.back_at = time.monotonic()
            log.info(
                "worker %s: the database answers again, after %.1f s",
                self.name,
                self.back_at - self.down_since,
            )
            self.down_since = None

    def may_reclaim(self) -> bool:
        """False while expired leases may be living workers' caught by the outage."""
        if self.down_since is not None:
            return False
        return self.back_at is None or time.monotonic() - self.back_at >= RECLAIM_GRACE_S

    async def retry(
        self,
        doing: str,
        operation: Callable[[], Awaitable[T]],
        stop: asyncio.Event | None = None,
    ) -> T:
        """``await operation()`` until the database answers; other errors pass through.  With
        ``stop``, a stop during the outage raises ``Stopped`` instead of waiting on."""
        backoff = Backoff(DATABASE_RETRIES)
        while True:
            try:
                result = await operation()
            except Exception as exc:
                if not is_database_unavailable(exc):
                    raise
                self.failed(exc, doing)
                log.debug("worker %s: %s failed again: %s", self.name, doing, exc)
                delay = backoff.delay()
                if stop is None:
                    await asyncio.sleep(delay)
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
                if stop.is_set():
                    raise Stopped from exc
            else:
                self.answered()
                return result


class Stopped(Exception):
    """The worker was asked to stop while waiting for the database."""


def worker_name() -> str:
    """Unique per process and start, so a restarted worker never reuses a lease."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Worker:
    def __init__(
        self,
        engine: AsyncEngine,
        sandbox: SandboxRunner,
        *,
        capabilities: Capabilities = queue.CPU_ONLY,
        poll_s: float | None = None,
        lease_s: float = queue.LEASE_SECONDS,
    ) -> None:
        self.engine = engine
        self.sessions = make_sessionmaker(engine)
        self.reads = make_sessionmaker(engine, read_only=True)
        self.sandbox = sandbox
        self.capabilities = capabilities
        self.poll_s = poll_s
        self.lease_s = lease_s
        self.name = worker_name()
        #: this host's roofline on the job core, measured at the start of ``run``
        self.peaks: Peaks | None = None
        self._busy = False
        self.outage = DatabaseOutage(self.name)
        self._bell = VerdictBell()  # tells the bot that started this worker, if one did

    async def run(self, stop: asyncio.Event) -> None:
        """Grade until ``stop`` is set; when the queue is empty, wait for a wakeup.

        ``poll_s`` (None: the backend's default, see ``bot.worker.wakeup``) bounds each wait.
        """
        self.peaks = await self._measure_peaks()
        try:
            # A database away at start (the host booted first, the server restarting) is
            # waited for like a later outage, the roofline already measured: exiting would
            # leave the first verdict after its return to the supervisor's growing backoff.
            await self.outage.retry(
                "checking the schema", lambda: require_current(self.engine), stop
            )
            await self.outage.retry(
                "pruning heartbeats", lambda: heartbeat.prune(self.sessions), stop
            )
            await self.outage.retry("beating", self._beat, stop)
        except Stopped:
            return
        beating = asyncio.create_task(self._keep_beating())
        log.info("worker %s ready (%s)", self.name, self.capabilities.describe())
        try:
            async with Wakeup(self.engine, self.poll_s) as wakeup:
                while not stop.is_set():
                    try:
                        if await self.outage.retry("claiming", self.step, stop):
                            continue
                    except Stopped:
                        break
                    await wakeup.wait(stop)
        finally:
            beating.cancel()
            with contextlib.suppress(Exception):
                await heartbeat.forget(self.sessions, self.name)

    async def _measure_peaks(self) -> Peaks | None:
        """Measure the roofline once, before claiming a job (so no job competes with it); a
        worker that cannot still grades, and advertises no roofline."""
        try:
            return await asyncio.to_thread(peaks.current)
        except Exception:
            log.warning("worker %s: could not measure the roofline", self.name, exc_info=True)
            return None

    async def _beat(self) -> None:
        await heartbeat.beat(self.sessions, self.name, self.capabilities, self.peaks)

    async def _keep_beating(self) -> None:
        while True:
            await asyncio.sleep(presence.BEAT_S)
            try:
                await self.outage.retry("beating", self._beat)
            except Exception:  # not an outage, a bug: logged, and the next beat tries again
                log.exception("worker %s: heartbeat failed", self.name)

    async def step(self) -> bool:
        """Grade at most one job; False when there was nothing to claim."""
        # While jobs keep coming, claim directly; when idle, peek first with a read that
        # takes no write lock, so frequent polling costs the other processes nothing.
        reclaim = self.outage.may_reclaim()
        if not self._busy and not await queue.has_claimable(
            self.reads, self.capabilities, reclaim=reclaim
        ):
            return False
        job = await queue.claim(
            self.sessions, self.name, self.capabilities, self.lease_s, reclaim=reclaim
        )
        self._busy = job is not None
        if job is None:
            return False
        with log_context(job_id=job.job_id, submission_id=job.submission_id):
            await self._handle(job)
        return True

    async def _handle(self, job: queue.ClaimedJob) -> None:
        """Grade a claimed job and write its verdict, or release it for another attempt."""
        try:
            spec = gradable_spec(job.spec)
        except Ungradable as exc:
            task_ref = await self._task_ref(job.submission_id)
            log.warning("job %d (%s) cannot be graded here: %s", job.job_id, task_ref, exc)
            await self._finish(job, Verdict.internal_error(task_ref, str(exc)))
            return
        renewer = asyncio.create_task(self._keep_lease(job))
        try:
            verdict = await asyncio.to_thread(self._grade, spec)
        except Exception as exc:
            log.exception("job %d attempt %d failed internally", job.job_id, job.attempt)
            error = f"{type(exc).__name__}: {exc}"
            await self.outage.retry(
                "releasing a job", lambda: queue.release(self.sessions, job, error)
            )
            return
        finally:
            renewer.cancel()
        await self._finish(job, verdict)

    async def _finish(self, job: queue.ClaimedJob, verdict: Verdict) -> None:
        recorded = await self.outage.retry(
            "recording a verdict", lambda: queue.complete(self.sessions, job, verdict)
        )
        if not recorded:
            log.warning("job %d: lease lost before the verdict was written", job.job_id)
            return
        self._bell.ring()
        log.info(
            "job %d %s %s score %.2f in %.0f ms",
            job.job_id,
            verdict.task,
            verdict.status,
            verdict.score,
            verdict.duration_s * 1000,
        )

    async def _task_ref(self, submission_id: int) -> str:
        """The submission's task, for a verdict on a job whose spec is unusable."""

        async def read() -> str | None:
            async with self.reads() as session:
                return await session.scalar(
                    select(Submission.task_ref).where(Submission.id == submission_id)
                )

        return await self.outage.retry("reading a task", read) or ""

    async def _keep_lease(self, job: queue.ClaimedJob) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            renewed = await self.outage.retry(
                "renewing a lease", lambda: queue.renew(self.sessions, job, self.lease_s)
            )
            if not renewed:
                log.warning("job %d: lease taken over by another worker", job.job_id)
                return

    def _grade(self, spec: JobSpec) -> Verdict:
        verdict = grade_prepared(
            spec,
            self.sandbox,
            allow_cuda=self.capabilities.cuda,  # WORKER_DEVICE=cpu keeps jobs off the GPU
        )
        if verdict.status == "error":
            raise RetryableError(verdict.feedback)
        return verdict
