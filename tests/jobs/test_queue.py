"""The job queue: one winner per job, leases that expire, attempts that run out."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import GradingJob, Submission
from bot.db.types import utcnow
from bot.jobs import queue
from bot.jobs.capabilities import Capabilities, Requirements
from bot.jobs.job_spec import SPEC_VERSION, SpecProblem, UnreadableSpec
from graders.base import Check, Verdict
from tests.postgres_server import PostgresServer
from tests.support import BUILD_TASK, REPO, add_member, queue_submission, seed_spec

PASSED = Verdict(BUILD_TASK, "passed", 1.0, (Check("values", True, "match"),), "ok")


async def _submit(
    engine: AsyncEngine, count: int, requirements: Requirements = queue.RUNS_ANYWHERE
) -> list[int]:
    async with make_sessionmaker(engine)() as session, session.begin():
        await add_member(session)
        jobs = [await queue_submission(session, requirements=requirements) for _ in range(count)]
    return [job_id for _, job_id in jobs]


async def test_claim_complete_and_position(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    first, second = await _submit(engine, 2)
    async with sessions() as session:
        assert await queue.position(session, second) == 2
    job = await queue.claim(sessions, "w1")
    assert job is not None and job.job_id == first and job.attempt == 1
    async with sessions() as session:
        assert await queue.position(session, second) == 2  # the running one is still ahead
        assert (await session.get(Submission, job.submission_id)).status == "grading"
    assert await queue.complete(sessions, job, PASSED)
    async with sessions() as session:
        stored = await session.get(Submission, job.submission_id)
        assert stored.status == "passed" and Verdict.from_json(stored.verdict) == PASSED
        assert stored.score == 1.0
        assert stored.finished_at is not None
        assert await queue.position(session, second) == 1


SMALL_GPU = Capabilities(cuda=True, gpu_name="small", gpu_memory_mib=8 * 1024)
BIG_GPU = Capabilities(cuda=True, gpu_name="big", gpu_memory_mib=80 * 1024)


async def test_requirements_route_jobs(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    reads = make_sessionmaker(engine, read_only=True)
    (big_job,) = await _submit(engine, 1, Requirements(needs_cuda=True, min_gpu_memory_mib=40_000))
    (cuda_job,) = await _submit(engine, 1, Requirements(needs_cuda=True))
    (cpu_job,) = await _submit(engine, 1)
    taken = await queue.claim(sessions, "cpu-worker", queue.CPU_ONLY)
    assert taken is not None and taken.job_id == cpu_job  # the CUDA jobs ahead are not its
    assert await queue.claim(sessions, "cpu-worker", queue.CPU_ONLY) is None
    assert not await queue.has_claimable(reads, queue.CPU_ONLY)
    assert await queue.has_claimable(reads, SMALL_GPU)
    small = await queue.claim(sessions, "small-gpu", SMALL_GPU)
    assert small is not None and small.job_id == cuda_job  # too little memory for big_job
    assert await queue.claim(sessions, "small-gpu", SMALL_GPU) is None
    big = await queue.claim(sessions, "big-gpu", BIG_GPU)
    assert big is not None and big.job_id == big_job


async def test_a_gpu_worker_also_grades_cpu_jobs(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    (cpu_job,) = await _submit(engine, 1)
    taken = await queue.claim(sessions, "gpu-worker", BIG_GPU)
    assert taken is not None and taken.job_id == cpu_job


async def _expire(engine: AsyncEngine, job_id: int) -> None:
    async with make_sessionmaker(engine)() as session, session.begin():
        await session.execute(
            update(GradingJob)
            .where(GradingJob.id == job_id)
            .values(lease_expires_at=utcnow() - timedelta(seconds=1))
        )


async def test_expired_lease_is_reclaimed_and_fences_the_old_owner(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    (job_id,) = await _submit(engine, 1)
    dead = await queue.claim(sessions, "dies")
    assert dead is not None
    assert await queue.claim(sessions, "other") is None  # lease still held
    await _expire(engine, job_id)
    again = await queue.claim(sessions, "other")
    assert again is not None and again.job_id == job_id and again.attempt == 2
    assert not await queue.renew(sessions, dead)
    stale = Verdict(BUILD_TASK, "failed", 0.0, (), "stale")
    assert not await queue.complete(sessions, dead, stale)
    assert await queue.renew(sessions, again)
    assert await queue.complete(sessions, again, PASSED)
    async with sessions() as session:
        assert (await session.get(Submission, again.submission_id)).status == "passed"


async def test_attempts_run_out_as_internal_error(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    (job_id,) = await _submit(engine, 1)
    for attempt in (1, 2, 3):
        job = await queue.claim(sessions, f"w{attempt}")
        assert job is not None and job.attempt == attempt
        await _expire(engine, job_id)
    assert await queue.claim(sessions, "w4") is None
    async with sessions() as session:
        job_row = await session.get(GradingJob, job_id)
        submission = await session.get(Submission, job_row.submission_id)
    words = (
        "internal error: grading failed 3 times without a verdict. This is not your fault and "
        "costs you nothing: resubmit, or ask a moderator to regrade it."
    )
    assert job_row.status == "dead" and job_row.error == words
    assert submission.status == "error" and submission.score is None
    assert Verdict.from_json(submission.verdict) == Verdict.internal_error(BUILD_TASK, words)
    # the verdict is stored once, on the submission: the job keeps only the error
    assert not hasattr(job_row, "result")


async def test_a_claimed_job_carries_its_spec_read_or_why_it_cannot_be(engine: AsyncEngine) -> None:
    """The claim reads the stored spec: the worker gets the ``JobSpec`` the bot queued, or the
    typed problem with its words; never the stored JSON."""
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        await add_member(session)
        good, missing, too_new, malformed = [
            job_id for _, job_id in [await queue_submission(session) for _ in range(4)]
        ]
    queued = seed_spec(BUILD_TASK, "s.py", b"pass\n")
    stored = {
        missing: None,  # a job from before jobs carried a spec
        too_new: {**queued.to_json(), "version": SPEC_VERSION + 1},
        malformed: {**queued.to_json(), "limits": "none"},
    }
    async with sessions() as session, session.begin():
        for job_id, spec in stored.items():
            await session.execute(
                update(GradingJob).where(GradingJob.id == job_id).values(spec=spec)
            )
    claimed = {}
    while (job := await queue.claim(sessions, "w1")) is not None:
        claimed[job.job_id] = job.spec
    assert claimed[good] == queued
    assert claimed[missing] == UnreadableSpec(
        SpecProblem.MISSING, "the job carries no grading spec (it was queued by an older bot)"
    )
    newer, broken = claimed[too_new], claimed[malformed]
    assert isinstance(newer, UnreadableSpec) and newer.problem is SpecProblem.TOO_NEW
    assert f"version {SPEC_VERSION + 1}" in newer.message
    assert isinstance(broken, UnreadableSpec) and broken.problem is SpecProblem.MALFORMED
    assert "limits" in broken.message


CLAIMER = """
import asyncio, sys
from bot.db.engine import make_engine, make_sessionmaker
from bot.jobs import queue
from graders.base import Verdict

async def main(url, name):
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    got = []
    while (job := await queue.claim(sessions, name)) is not None:
        got.append(job.job_id)
        await queue.complete(sessions, job, Verdict("t/t", "passed", 1.0, (), "ok"))
    await engine.dispose()
    print(" ".join(map(str, got)))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_one_winner_per_job_across_processes(engine: AsyncEngine, database_url: str) -> None:
    job_ids = await _submit(engine, 120)
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CLAIMER,
            database_url,
            f"p{i}",
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(4)
    ]
    claimed: list[int] = []
    for process in processes:
        out, err = await process.communicate()
        assert process.returncode == 0, err.decode()
        claimed += [int(x) for x in out.split()]
    assert sorted(claimed) == sorted(job_ids)  # every job once, none twice
    async with make_sessionmaker(engine)() as session:
        attempts = (await session.execute(select(GradingJob.attempts))).scalars().all()
    assert set(attempts) == {1}


@pytest.fixture
async def postgres_engine(postgres_server: PostgresServer) -> AsyncIterator[AsyncEngine]:
    """PostgreSQL only: row locks and SKIP LOCKED have no SQLite counterpart."""
    engine = make_engine(await postgres_server.create_database())
    yield engine
    await engine.dispose()


async def test_a_claim_skips_a_job_another_claimer_holds(postgres_engine: AsyncEngine) -> None:
    """With the oldest job row locked by another transaction, a claim takes the next one."""
    first, second = await _submit(postgres_engine, 2)
    sessions = make_sessionmaker(postgres_engine)
    async with postgres_engine.connect() as other, other.begin():
        locked = select(GradingJob.id).where(GradingJob.id == first).with_for_update()
        assert await other.scalar(locked) == first
        try:
            async with asyncio.timeout(10):
                job = await queue.claim(sessions, "w2")
        except TimeoutError:
            raise AssertionError(
                "the claim waited for the locked job instead of skipping it"
            ) from None
        assert job is not None and job.job_id == second
    again = await queue.claim(sessions, "w3")  # the lock is gone: the first job is claimable
    assert again is not None and again.job_id == first
