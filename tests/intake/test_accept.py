"""``accept.submit`` and ``regrade``: the bot's use cases that queue self-contained jobs,
driven without Discord on both database backends."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.content import Quest
from bot.curriculum.guild_map import GuildMap
from bot.db.engine import make_sessionmaker
from bot.db.models import AuditEntry, GradingJob, Submission
from bot.intake import accept
from bot.intake.regrade import regrade
from bot.intake.submission_input import validate_submission
from bot.jobs.capabilities import Requirements
from bot.jobs.job_spec import JobSpec
from graders.registry import registry
from tests import timeline
from tests.support import SOLUTIONS, seed_content

GUILD = 7
LIMITS = accept.UploadLimits(max_py_bytes=256 * 1024, max_ipynb_bytes=2 * 1024 * 1024)
CORRECT = (SOLUTIONS / "correct.py").read_bytes()
NOTEBOOK = (SOLUTIONS / "correct_magics.ipynb").read_bytes()


def added_quest(**task: Any) -> Quest:
    """A quest a moderator added (not in the shipped content): one build task on the
    ``matmul_three_ways`` grader, one exercise."""
    build = {
        "id": "three-ways",
        "title": "Matmul, again",
        "kind": "build",
        "xp": 45,
        "prompt": "Write them again.",
        "grader": "matmul_three_ways",
        "interface": [
            f"{name}(A, B) -> Tensor" for name in registry()["matmul_three_ways"].interface
        ],
        **task,
    }
    return Quest.model_validate(
        {
            "id": "matmul-again",
            "title": "Matmul again",
            "phase": "foundations",
            "summary": "Once more.",
            "readings": [],
            "tasks": [
                build,
                {"id": "drill", "title": "Drill", "kind": "exercise", "xp": 5, "prompt": "Do."},
            ],
        }
    )


class Clock:
    """The bot's clock for one test: the real now, moved by hand."""

    def __init__(self) -> None:
        self.moment = timeline.now()

    def __call__(self) -> datetime:
        return self.moment


async def _submit(
    sessions: async_sessionmaker[AsyncSession],
    quest: Quest,
    task_id: str = "three-ways",
    *,
    user_id: int = 100,
    filename: str = "solution.py",
    data: bytes = CORRECT,
    hourly_limit: int = 20,
    now: Clock | None = None,
) -> accept.Queued:
    return await accept.submit(
        sessions,
        guild_id=GUILD,
        submitter=accept.Submitter(user_id, f"user{user_id}"),
        quest=quest,
        task=quest.task(task_id),
        filename=filename,
        data=data,
        limits=LIMITS,
        hourly_limit=hourly_limit,
        reply=None,
        now=now or Clock(),
    )


async def _job(sessions: async_sessionmaker[AsyncSession], job_id: int) -> GradingJob:
    async with sessions() as session:
        job = await session.get(GradingJob, job_id)
    assert job is not None
    return job


async def _count(sessions: async_sessionmaker[AsyncSession], model: type) -> int:
    async with sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def _finish(sessions: async_sessionmaker[AsyncSession], queued: accept.Queued) -> None:
    """The job is done (as a worker would leave it), so the member may submit again."""
    async with sessions() as session, session.begin():
        await session.execute(
            update(GradingJob).where(GradingJob.id == queued.job_id).values(status="done")
        )
        await session.execute(
            update(Submission).where(Submission.id == queued.submission_id).values(status="failed")
        )


async def test_an_added_quests_notebook_is_queued_with_its_spec(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    quest = added_quest(requires={"cuda": True, "min_gpu_memory_gib": 16})
    queued = await _submit(sessions, quest, filename="mine.ipynb", data=NOTEBOOK)
    assert queued.task_ref == "matmul-again/three-ways" and queued.position == 1
    assert not queued.worker_seen  # no GPU worker has ever been seen
    job = await _job(sessions, queued.job_id)
    spec = JobSpec.from_json(job.spec)
    prepared = validate_submission("mine.ipynb", NOTEBOOK)
    assert spec.task_ref == "matmul-again/three-ways"
    assert spec.grader == "matmul_three_ways"
    assert spec.interface == registry()["matmul_three_ways"].interface
    assert spec.limits == registry()["matmul_three_ways"].limits
    assert spec.source == prepared.source and "!pip" not in spec.source  # converted once
    assert spec.notes == prepared.notes and any("magic" in note for note in spec.notes)
    assert spec.filename == "mine.ipynb"
    needs = Requirements(needs_cuda=True, min_gpu_memory_mib=16 * 1024)
    assert spec.requirements == needs == queued.requirements
    assert (job.needs_cuda, job.min_gpu_memory_mib) == (True, 16 * 1024)  # what claims filter on
    async with sessions() as session:
        stored = await session.get(Submission, queued.submission_id)
    assert stored.content == NOTEBOOK and stored.file_kind == "ipynb"
    assert stored.task_ref == "matmul-again/three-ways" and stored.status == "queued"


@pytest.mark.parametrize(
    ("filename", "data", "words"),
    [
        ("empty.py", b"", "is empty"),
        ("blob.py", b"\x00\x01" * 20, "binary"),
        ("big.py", b"#" * (LIMITS.max_py_bytes + 1), "the limit for .py files is 256 KiB"),
        ("broken.ipynb", b"{not json", "is not a notebook that can be graded"),
        ("notes.txt", b"x = 1\n", "send a Python file"),
    ],
)
async def test_a_bad_upload_is_refused_and_nothing_is_stored(
    engine: AsyncEngine, filename: str, data: bytes, words: str
) -> None:
    sessions = make_sessionmaker(engine)
    with pytest.raises(accept.IntakeRefused, match=words):
        await _submit(sessions, added_quest(), filename=filename, data=data)
    assert await _count(sessions, Submission) == 0
    assert await _count(sessions, GradingJob) == 0


async def test_only_build_tasks_with_a_known_grader_are_queued(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    with pytest.raises(accept.IntakeRefused, match="`matmul-again/drill` is an exercise task"):
        await _submit(sessions, added_quest(), "drill")
    unknown = added_quest(grader="warp_drive")
    with pytest.raises(accept.IntakeRefused, match="needs grader `warp_drive`"):
        await _submit(sessions, unknown)
    assert await _count(sessions, Submission) == 0


async def test_one_in_flight_then_the_hourly_limit(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    quest, clock = added_quest(), Clock()
    first = await _submit(sessions, quest, hourly_limit=2, now=clock)
    with pytest.raises(accept.IntakeRefused, match=f"submission #{first.submission_id} is still"):
        await _submit(sessions, quest, hourly_limit=2, now=clock)
    await _finish(sessions, first)
    clock.moment += timedelta(minutes=10)
    second = await _submit(sessions, quest, hourly_limit=2, now=clock)
    await _finish(sessions, second)
    clock.moment += timedelta(minutes=10)
    with pytest.raises(accept.IntakeRefused, match="the limit is 2\\); try again in 40 min"):
        await _submit(sessions, quest, hourly_limit=2, now=clock)
    other = await _submit(sessions, quest, user_id=200, hourly_limit=2, now=clock)
    assert other.position == 1  # the others' jobs are done: first in line
    assert await _count(sessions, Submission) == 3


async def test_regrade_builds_a_fresh_spec_from_the_current_map(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    queued = await _submit(sessions, added_quest(), filename="mine.ipynb", data=NOTEBOOK)
    await _finish(sessions, queued)
    async with sessions() as session, session.begin():  # as a job queued before jobs had specs
        await session.execute(update(GradingJob).values(spec=None))
    now_on_gpu = added_quest(requires={"cuda": True})  # the moderator has changed the task since
    requeued = await regrade(
        sessions,
        guild_id=GUILD,
        submission_id=queued.submission_id,
        guild_map=GuildMap(quests=(now_on_gpu,), phase_titles={}),
        limits=LIMITS,
        moderator_user_id=9,
    )
    assert requeued.job_id != queued.job_id
    job = await _job(sessions, requeued.job_id)
    spec = JobSpec.from_json(job.spec)
    assert spec.task_ref == "matmul-again/three-ways" and spec.grader == "matmul_three_ways"
    assert spec.source == validate_submission("mine.ipynb", NOTEBOOK).source
    assert spec.requirements == Requirements(needs_cuda=True) and job.needs_cuda
    async with sessions() as session:
        stored = await session.get(Submission, queued.submission_id)
        audit = (await session.execute(select(AuditEntry))).scalars().one()
    assert stored.status == "queued" and stored.settled_at is None
    assert (audit.action, audit.target, audit.actor_user_id) == (
        "regrade",
        f"submission:{queued.submission_id}",
        9,
    )
    assert audit.details == {"previous": "failed", "previous_score": None}


async def test_regrade_refusals(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    quest = added_quest()
    queued = await _submit(sessions, quest)

    async def attempt(guild_map: GuildMap, guild_id: int = GUILD, number: int = 0) -> None:
        await regrade(
            sessions,
            guild_id=guild_id,
            submission_id=number or queued.submission_id,
            guild_map=guild_map,
            limits=LIMITS,
            moderator_user_id=9,
        )

    on_map = GuildMap(quests=(quest,), phase_titles={})
    with pytest.raises(accept.IntakeRefused, match="is already being graded"):
        await attempt(on_map)
    await _finish(sessions, queued)
    with pytest.raises(accept.IntakeRefused, match="There is no submission #"):
        await attempt(on_map, guild_id=GUILD + 1)
    with pytest.raises(accept.IntakeRefused, match="There is no submission #999"):
        await attempt(on_map, number=999)
    shipped_only = GuildMap(quests=seed_content().quests, phase_titles={})
    with pytest.raises(
        accept.IntakeRefused,
        match="is for `matmul-again/three-ways`, which is no longer on this server's map",
    ):
        await attempt(shipped_only)
    assert await _count(sessions, GradingJob) == 1  # nothing was queued again
    assert await _count(sessions, AuditEntry) == 0
