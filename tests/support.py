"""Helpers for tests: where things are, running the CLI as a user would, queued submissions."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession

from bot.content import BuildTask, Content, load_content
from bot.db.models import Guild, Member, Submission
from bot.intake.submission_input import UploadLimits, validate_submission
from bot.jobs import queue
from bot.jobs.capabilities import Requirements
from bot.jobs.job_spec import JobSpec
from tests.faked_clock import faked_clock_env

REPO = Path(__file__).resolve().parent.parent
SEED_QUESTS = REPO / "quests"
SOLUTIONS = REPO / "tests" / "graders" / "solutions"  # known-good and known-bad submissions
BUILD_TASK = "go-brrrr/matmul-three-ways"  # what the files directly in SOLUTIONS solve
GUILD_ID = 1  # the one guild queued submissions belong to


def start_worker(database_url: str, cwd: Path, **env: str) -> subprocess.Popen[str]:
    """Start ``python -m bot worker --count 1`` with a clean environment; its log is on stderr."""
    base = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(REPO),
        "DATABASE_URL": database_url,  # and no QUESTS_DIR: a worker grades from the job alone
        **faked_clock_env(),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "worker", "--count", "1"],
        cwd=cwd,
        env={**base, **env},
        stderr=subprocess.PIPE,
        text=True,
    )


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m bot ARGS`` in ``cwd`` with a clean, explicit environment."""
    base = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG", "TMPDIR"}}
    base["PYTHONPATH"] = str(REPO)
    base.update(faked_clock_env())
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


async def add_member(session: AsyncSession, member_id: int = 1) -> int:
    """Add member ``member_id`` (and the one guild) unless there: a submission needs an owner."""
    if await session.get(Guild, GUILD_ID) is None:
        session.add(Guild(id=GUILD_ID))
    if await session.get(Member, member_id) is None:
        session.add(Member(id=member_id, guild_id=GUILD_ID, user_id=10 * member_id))
    await session.flush()
    return member_id


async def queue_submission(
    session: AsyncSession,
    data: bytes = b"pass\n",
    *,
    filename: str = "s.py",
    member_id: int = 1,
    task_ref: str = BUILD_TASK,
    requirements: Requirements = queue.RUNS_ANYWHERE,
) -> tuple[int, int]:
    """Store a submission and queue its job as the bot's intake does, without Discord: the job
    carries the spec of the shipped task ``task_ref`` (with ``requirements``).

    Runs in the caller's transaction, so a batch commits (and notifies workers) at once.
    Returns the submission's id and the job's id.
    """
    submission = Submission(
        guild_id=GUILD_ID,
        member_id=member_id,
        task_ref=task_ref,
        filename=filename,
        file_kind=Path(filename).suffix.lstrip("."),
        content=data,
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    session.add(submission)
    await session.flush()
    spec = seed_spec(task_ref, filename, data)
    job = await queue.enqueue(
        session, submission.id, dataclasses.replace(spec, requirements=requirements)
    )
    return submission.id, job.id


@cache
def seed_content() -> Content:
    return load_content(SEED_QUESTS)


def seed_spec(task_ref: str, filename: str, data: bytes) -> JobSpec:
    """The job spec the bot builds for ``data`` submitted to the shipped task ``task_ref``."""
    _, task = seed_content().find_task(task_ref)
    assert isinstance(task, BuildTask), f"{task_ref} is not a build task"
    return JobSpec.build(
        task_ref, task, validate_submission(filename, data, UploadLimits.defaults()), filename
    )


async def verify_problems(url: str, lease_s: float) -> list[str]:
    """What ``brrrbot db verify`` prints as problems for the database at ``url`` (empty when
    it is consistent): the command's own check, ``verify_database``, run in this process,
    which spares the teardown that calls it a process start.  tests/test_cli.py runs the
    command itself."""
    from bot.invariants import verify_database

    return [str(problem) for problem in await verify_database(url, lease_s)]
