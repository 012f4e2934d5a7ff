"""One grading worker: claim a job, grade it in the sandbox under a lease, write the verdict.

This process holds the database connection and the graders (trusted code); it
never runs learner code itself: that happens in the zygote's forked jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.content import Content
from bot.content.schema import BuildTask
from bot.db.engine import make_sessionmaker
from bot.db.models import Submission
from bot.grading import heartbeat, queue
from bot.grading.capabilities import Capabilities
from bot.grading.service import SandboxRunner, grade_prepared
from bot.grading.submission_input import SubmissionRejected, validate_submission
from bot.grading.wakeup import Wakeup
from graders.base import Verdict

log = logging.getLogger(__name__)


class RetryableError(Exception):
    """Grading failed for a reason that is not the learner's: try another attempt."""


@dataclass(frozen=True)
class SubmissionFile:
    task_ref: str
    filename: str
    data: bytes


def worker_name() -> str:
    """Unique per process and start, so a restarted worker never reuses a lease."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Worker:
    def __init__(
        self,
        engine: AsyncEngine,
        content: Content,
        sandbox: SandboxRunner,
        *,
        capabilities: Capabilities = queue.CPU_ONLY,
        size_limits: dict[str, int] | None = None,
        poll_s: float | None = None,
        lease_s: float = queue.LEASE_SECONDS,
    ) -> None:
        self.engine = engine
        self.sessions = make_sessionmaker(engine)
        self.reads = make_sessionmaker(engine, read_only=True)
        self.content = content
        self.sandbox = sandbox
        self.capabilities = capabilities
        self.size_limits = size_limits or {}
        self.poll_s = poll_s
        self.lease_s = lease_s
        self.name = worker_name()
        self._busy = False

    async def run(self, stop: asyncio.Event) -> None:
        """Grade until ``stop`` is set; when the queue is empty, wait for a wakeup.

        ``poll_s`` (None: the backend's default, see ``bot.grading.wakeup``) bounds each wait.
        """
        await heartbeat.prune(self.sessions)
        await heartbeat.beat(self.sessions, self.name, self.capabilities)
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

    async def _keep_beating(self) -> None:
        while True:
            await asyncio.sleep(heartbeat.BEAT_S)
            try:
                await heartbeat.beat(self.sessions, self.name, self.capabilities)
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
        submission = await self._load(job.submission_id)
        renewer = asyncio.create_task(self._keep_lease(job))
        try:
            verdict = await asyncio.to_thread(self._grade, submission)
        except Exception as exc:
            log.exception("job %d attempt %d failed internally", job.job_id, job.attempt)
            await queue.release(self.sessions, job, f"{type(exc).__name__}: {exc}")
            return True
        finally:
            renewer.cancel()
        if not await queue.complete(self.sessions, job, verdict.to_json()):
            log.warning("job %d: lease lost before the verdict was written", job.job_id)
        else:
            log.info(
                "job %d %s %s score %.2f in %.0f ms",
                job.job_id,
                submission.task_ref,
                verdict.status,
                verdict.score,
                verdict.duration_s * 1000,
            )
        return True

    async def _load(self, submission_id: int) -> SubmissionFile:
        async with self.reads() as session:
            row = (
                await session.execute(
                    select(Submission.task_ref, Submission.filename, Submission.content).where(
                        Submission.id == submission_id
                    )
                )
            ).one()
        return SubmissionFile(*row)

    async def _keep_lease(self, job: queue.ClaimedJob) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            if not await queue.renew(self.sessions, job, self.lease_s):
                log.warning("job %d: lease taken over by another worker", job.job_id)
                return

    def _grade(self, submission: SubmissionFile) -> Verdict:
        task = self._build_task(submission.task_ref)
        if task is None:
            return _error(submission.task_ref, f"task {submission.task_ref} is not gradable code")
        try:
            prepared = validate_submission(submission.filename, submission.data, **self.size_limits)
        except SubmissionRejected as exc:
            return Verdict(submission.task_ref, "failed", 0.0, (), str(exc))
        verdict = grade_prepared(
            submission.task_ref,
            task,
            prepared,
            submission.filename,
            self.sandbox,
            allow_cuda=self.capabilities.cuda,  # WORKER_DEVICE=cpu keeps jobs off the GPU
        )
        if verdict.status == "error":
            raise RetryableError(verdict.feedback)
        return verdict

    def _build_task(self, task_ref: str) -> BuildTask | None:
        try:
            _, task = self.content.find_task(task_ref)
        except KeyError:
            return None
        return task if isinstance(task, BuildTask) else None


def _error(task_ref: str, message: str) -> Verdict:
    return Verdict(task_ref, "error", 0.0, (), message)
