"""A member is told at once when no worker able to grade their task is around."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime

import pytest
import pytest_asyncio

from fakediscord import User
from tests.bot.conftest import World, start_world
from tests.support import SEED_QUESTS

pytestmark = pytest.mark.asyncio(loop_scope="module")

GPU_ONLY = (
    "    grader: matmul_three_ways\n    requires:\n      cuda: true\n      min_gpu_memory_gib: 16\n"
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    tmp = tmp_path_factory.mktemp("routing")
    quests = tmp / "quests"
    shutil.copytree(SEED_QUESTS, quests)
    path = quests / "go-brrrr.yaml"
    text = path.read_text()
    assert "    grader: matmul_three_ways\n" in text
    path.write_text(text.replace("    grader: matmul_three_ways\n", GPU_ONLY, 1))
    async for started in start_world(tmp, workers=0, extra_env={"QUESTS_DIR": str(quests)}):
        yield started


def _heartbeat(world: World, name: str, cuda: bool, memory_mib: int) -> None:
    now = datetime.now(UTC).replace(tzinfo=None).isoformat(sep=" ")
    with sqlite3.connect(world.workdir / "data" / "brrrbot.sqlite3") as db:
        db.execute(
            "INSERT INTO worker_heartbeats (name, host, cuda, gpu_name, gpu_memory_mib, "
            "started_at, last_seen_at) VALUES (?, 'gpu-host', ?, ?, ?, ?, ?)",
            (name, cuda, "Test GPU" if cuda else None, memory_mib, now, now),
        )


def _jobs_of(world: World, user: User) -> list[tuple[str, str, int, int]]:
    """(submission status, job status, needs CUDA, minimum GPU MiB) of ``user``'s jobs."""
    with closing(sqlite3.connect(world.database)) as db:
        return db.execute(
            "SELECT submissions.status, grading_jobs.status, grading_jobs.needs_cuda, "
            "grading_jobs.min_gpu_memory_mib FROM grading_jobs "
            "JOIN submissions ON submissions.id = grading_jobs.submission_id "
            "JOIN members ON members.id = submissions.member_id WHERE members.user_id = ?",
            (user.id,),
        ).fetchall()


async def test_no_gpu_worker_is_said_at_once_and_the_job_waits(world: World) -> None:
    learner = world.learner()
    reply = await world.submit_reply(learner)
    assert reply.startswith("Queued")
    assert "no grader with a CUDA GPU with at least 16 GiB of memory has been seen" in reply
    assert "loses nothing" in reply
    # it waits in the queue for a worker that can grade it
    assert _jobs_of(world, learner) == [("queued", "queued", 1, 16 * 1024)]


async def test_a_cpu_worker_or_a_small_gpu_does_not_count(world: World) -> None:
    _heartbeat(world, "cpu-1", cuda=False, memory_mib=0)
    _heartbeat(world, "small-gpu", cuda=True, memory_mib=8 * 1024)
    assert "no grader with a CUDA GPU" in await world.submit_reply(world.learner())


async def test_a_capable_worker_seen_recently_means_no_warning(world: World) -> None:
    _heartbeat(world, "big-gpu", cuda=True, memory_mib=80 * 1024)
    reply = await world.submit_reply(world.learner())
    assert reply.startswith("Queued") and "no grader" not in reply
