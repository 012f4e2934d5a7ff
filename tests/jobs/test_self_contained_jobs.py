"""A real ``brrrbot worker``, started without any quest content, grades from the job alone.

The bot side queues through ``accept.submit``, as ``/submit`` does; the worker gets no
``QUESTS_DIR`` and runs where no ``./quests`` exists.  Jobs it can never grade (a grader it
does not have, a spec from a newer bot, no spec at all) end at once with a verdict that says
why, after one attempt.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import importlib.metadata
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from bot.curriculum.guild_map import GuildMap
from bot.db.engine import make_sessionmaker
from bot.db.models import GradingJob, Submission
from bot.intake import accept
from bot.jobs import queue
from bot.jobs.job_spec import SPEC_VERSION, JobSpec
from graders.base import Verdict
from tests.faked_clock import faked_clock_env
from tests.intake.test_accept import CORRECT, GUILD, LIMITS, Clock, added_quest
from tests.support import BUILD_TASK, REPO, add_member, seed_spec

VERSION = importlib.metadata.version("brrrbot")


@pytest.fixture
def worker(database_url: str, engine: AsyncEngine, tmp_path: Path) -> Iterator[subprocess.Popen]:
    """``brrrbot worker`` with no content: no QUESTS_DIR, and no ./quests where it runs."""
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(REPO),
        "DATABASE_URL": database_url,
        "WORKER_DEVICE": "cpu",
        **faked_clock_env(),
    }
    assert "QUESTS_DIR" not in env and not (tmp_path / "quests").exists()
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "worker", "--count", "1"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield process
    if process.poll() is None:
        process.kill()
    process.communicate(timeout=30)


async def _finished(
    engine: AsyncEngine, worker: subprocess.Popen, submission_id: int, timeout: float = 120
) -> tuple[Submission, GradingJob]:
    """The submission once it has a verdict, and its job; fails naming the submission."""
    sessions = make_sessionmaker(engine)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        async with sessions() as session:
            submission = await session.get(Submission, submission_id)
            if submission.status in ("passed", "failed", "error"):
                job = await session.scalar(
                    select(GradingJob).where(GradingJob.submission_id == submission_id)
                )
                return submission, job
        if worker.poll() is not None:
            raise AssertionError(f"the worker exited:\n{worker.communicate()[1][-3000:]}")
        await asyncio.sleep(0.05)
    worker.terminate()
    log = worker.communicate(timeout=30)[1][-3000:]
    raise AssertionError(f"no verdict for submission {submission_id} in {timeout} s:\n{log}")


def _stop(worker: subprocess.Popen) -> str:
    worker.send_signal(signal.SIGTERM)
    _, log = worker.communicate(timeout=60)
    assert worker.returncode == 0, log[-3000:]
    return log


async def test_a_job_of_an_added_quest_is_graded_without_content(
    engine: AsyncEngine, worker: subprocess.Popen
) -> None:
    queued = await accept.submit(
        make_sessionmaker(engine),
        guild_id=GUILD,
        submitter=accept.Submitter(100, "learner"),
        guild_map=GuildMap(quests=(added_quest(),), phase_titles={}),
        task_ref="matmul-again/three-ways",
        filename="solution.py",
        data=CORRECT,
        limits=LIMITS,
        hourly_limit=20,
        reply=None,
        now=Clock(),
    )
    submission, job = await _finished(engine, worker, queued.submission_id)
    verdict = Verdict.from_json(submission.verdict)
    assert (verdict.task, verdict.status, verdict.score) == ("matmul-again/three-ways", "passed", 1)
    assert verdict.checks and all(check.passed for check in verdict.checks)
    assert (job.status, job.attempts) == ("done", 1)
    assert f"job {job.id} matmul-again/three-ways passed" in _stop(worker)


async def _queue(session: AsyncSession, spec: JobSpec | None, task_ref: str = BUILD_TASK) -> int:
    """Store a submission and its job carrying ``spec`` (None: a job from before specs)."""
    submission = Submission(
        guild_id=1,
        member_id=await add_member(session),
        task_ref=task_ref,
        filename="solution.py",
        file_kind="py",
        content=CORRECT,
        size_bytes=len(CORRECT),
        sha256=hashlib.sha256(CORRECT).hexdigest(),
    )
    session.add(submission)
    await session.flush()
    job = await queue.enqueue(session, submission.id, spec or seed_spec(task_ref, "s.py", CORRECT))
    if spec is None:
        await session.execute(update(GradingJob).where(GradingJob.id == job.id).values(spec=None))
    return submission.id


async def test_jobs_this_worker_cannot_grade_end_at_once_with_the_reason(
    engine: AsyncEngine, worker: subprocess.Popen
) -> None:
    good = seed_spec(BUILD_TASK, "solution.py", CORRECT)
    newer_bot = dataclasses.replace(good, grader="warp_drive")  # a grader only a newer bot has
    async with make_sessionmaker(engine)() as session, session.begin():
        unknown = await _queue(session, newer_bot)
        too_new = await _queue(session, dataclasses.replace(good, version=SPEC_VERSION + 1))
        legacy = await _queue(session, None)
        graded = await _queue(session, good)  # queued last: the worker gets past the others
    passed, _ = await _finished(engine, worker, graded)
    assert passed.status == "passed"
    expected = {
        unknown: (
            f"this server's quest needs grader `warp_drive`, which the worker at version "
            f"{VERSION} does not have. A moderator can upgrade the workers and then regrade it."
        ),
        too_new: (
            f"the worker at version {VERSION} cannot grade this job: the job's spec is version "
            f"{SPEC_VERSION + 1}; this worker understands up to {SPEC_VERSION}: upgrade the worker."
        ),
        legacy: (
            f"the worker at version {VERSION} cannot grade this job: the job carries no grading "
            "spec (it was queued by an older bot). A moderator can regrade it: a regrade queues "
            "it with a spec."
        ),
    }
    for submission_id, message in expected.items():
        submission, job = await _finished(engine, worker, submission_id, timeout=5)
        assert Verdict.from_json(submission.verdict) == Verdict.internal_error(BUILD_TASK, message)
        assert submission.status == "error" and submission.score is None
        assert (job.status, job.attempts, job.error) == ("done", 1, message)  # never retried
    _stop(worker)
