"""One grading worker: claim a job, grade it in the sandbox under a lease, write the verdict.

This process holds the database connection and the graders (trusted code); it
never runs learner code itself: that happens in the zygote's forked jobs.  It
grades from the job's spec alone (``bot.jobs.job_spec``): no quest files, no
second validation of the upload.  A job this worker cannot grade at all (no spec,
a spec too new, a grader it does not have) gets a final error verdict at once,
saying why, instead of being retried by worker after worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import logging
import os
import secrets
import socket
from functools import cache

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db import presence
from bot.db.engine import make_sessionmaker
from bot.db.models import Submission
from bot.jobs import heartbeat, queue
from bot.jobs.capabilities import Capabilities, Peaks
from bot.jobs.job_spec import JobSpec, SpecProblem, UnreadableSpec
from bot.jobs.verdict_pipe import VerdictBell
from bot.logs import log_context
from bot.worker import peaks
from bot.worker.grade_job import SandboxRunner, grade_prepared
from bot.worker.wakeup import Wakeup
from graders.base import Verdict
from graders.registry import find

log = logging.getLogger(__name__)


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
        self._bell = VerdictBell()  # tells the bot that started this worker, if one did

    async def run(self, stop: asyncio.Event) -> None:
        """Grade until ``stop`` is set; when the queue is empty, wait for a wakeup.

        ``poll_s`` (None: the backend's default, see ``bot.worker.wakeup``) bounds each wait.
        """
        self.peaks = await self._measure_peaks()
        await heartbeat.prune(self.sessions)
        await heartbeat.beat(self.sessions, self.name, self.capabilities, self.peaks)
        beating = asyncio.create_task(self._keep_beating())
        log.info("worker %s ready (%s)", self.name, self.capabilities.describe())
        try:
            async with Wakeup(self.engine, self.poll_s) as wakeup:
                while not stop.is_set():
                    if await self.step():
                        continue
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

    async def _keep_beating(self) -> None:
        while True:
            await asyncio.sleep(presence.BEAT_S)
            try:
                await heartbeat.beat(self.sessions, self.name, self.capabilities, self.peaks)
            except Exception:  # a database blip must not stop grading; the next beat retries
                log.warning("worker %s: heartbeat failed", self.name, exc_info=True)

    async def step(self) -> bool:
        """Grade at most one job; False when there was nothing to claim."""
        # While jobs keep coming, claim directly; when idle, peek first with a read that
        # takes no write lock, so frequent polling costs the other processes nothing.
        if not self._busy and not await queue.has_claimable(self.reads, self.capabilities):
            return False
        job = await queue.claim(self.sessions, self.name, self.capabilities, self.lease_s)
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
            await queue.release(self.sessions, job, f"{type(exc).__name__}: {exc}")
            return
        finally:
            renewer.cancel()
        await self._finish(job, verdict)

    async def _finish(self, job: queue.ClaimedJob, verdict: Verdict) -> None:
        if not await queue.complete(self.sessions, job, verdict):
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
        async with self.reads() as session:
            task_ref = await session.scalar(
                select(Submission.task_ref).where(Submission.id == submission_id)
            )
        return task_ref or ""

    async def _keep_lease(self, job: queue.ClaimedJob) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            if not await queue.renew(self.sessions, job, self.lease_s):
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
