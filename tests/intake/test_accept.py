"""``accept.submit`` and ``regrade``: the bot's use cases that queue self-contained jobs,
driven without Discord on both database backends.  Every "no" is decided here, by intake
alone: the use case called directly gives the typed refusal (the front ends' tests show the
words)."""

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
from bot.intake.refusals import (
    AlreadyBeingGraded,
    CannotRegrade,
    EmptyFile,
    HourlyLimit,
    InFlight,
    NoSuchSubmission,
    NotABuildTask,
    NotANotebook,
    NulByte,
    Refusal,
    Refused,
    TaskOffTheMap,
    TooLarge,
    UnknownGrader,
    UnknownTask,
    WrongFileKind,
)
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
    task_ref: str | None = None,
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
        guild_map=GuildMap(quests=(quest,), phase_titles={}),
        task_ref=f"{quest.id}/{task_id}" if task_ref is None else task_ref,
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
    prepared = validate_submission("mine.ipynb", NOTEBOOK, LIMITS)
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


async def refused(attempt: Any) -> Refusal:
    """The refusal ``attempt`` (an awaitable) ends with."""
    with pytest.raises(Refused) as caught:
        await attempt
    return caught.value.refusal


BIG = LIMITS.max_py_bytes + 1


@pytest.mark.parametrize(
    ("filename", "data", "expected"),
    [
        ("empty.py", b"", EmptyFile("empty.py")),
        ("blob.py", b"\x00\x01" * 20, NulByte("blob.py", 0)),
        ("big.py", b"#" * BIG, TooLarge("big.py", BIG, LIMITS.max_py_bytes, "py")),
        ("huge.ipynb", b" " * (3 << 20), TooLarge("huge.ipynb", 3 << 20, 2 << 20, "ipynb")),
        ("notes.txt", b"x = 1\n", WrongFileKind("notes.txt", ".txt")),
    ],
)
async def test_a_bad_upload_is_refused_and_nothing_is_stored(
    engine: AsyncEngine, filename: str, data: bytes, expected: Refusal
) -> None:
    sessions = make_sessionmaker(engine)
    attempt = _submit(sessions, added_quest(), filename=filename, data=data)
    assert await refused(attempt) == expected
    assert await _count(sessions, Submission) == 0
    assert await _count(sessions, GradingJob) == 0


async def test_a_notebook_that_is_not_one_is_refused(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    refusal = await refused(_submit(sessions, added_quest(), filename="b.ipynb", data=b"{not"))
    assert isinstance(refusal, NotANotebook) and refusal.filename == "b.ipynb"
    assert "not valid JSON" in refusal.problem
    assert await _count(sessions, Submission) == 0


async def test_only_build_tasks_of_the_map_with_a_known_grader_are_queued(
    engine: AsyncEngine,
) -> None:
    sessions = make_sessionmaker(engine)
    quest = added_quest()
    assert await refused(_submit(sessions, quest, "drill")) == NotABuildTask(
        "matmul-again/drill", "exercise"
    )
    for ref in ("matmul-again/nope", "go-brrrr/matmul-three-ways", "three-ways", "", "a/b/c"):
        assert await refused(_submit(sessions, quest, task_ref=ref)) == UnknownTask(ref)
    unknown = added_quest(grader="warp_drive")
    assert await refused(_submit(sessions, unknown)) == UnknownGrader(
        "matmul-again/three-ways", "warp_drive"
    )
    assert await _count(sessions, Submission) == 0
    # spaces around a ref do not matter; the queued task is named by the map's own ref
    queued = await _submit(sessions, quest, task_ref="  matmul-again/three-ways ")
    assert queued.task_ref == "matmul-again/three-ways"


async def test_the_task_is_refused_before_the_file(engine: AsyncEngine) -> None:
    """The order a member is told in: a wrong task first, then the file, then the pace."""
    sessions = make_sessionmaker(engine)
    quest = added_quest()
    bad_file = {"filename": "notes.txt", "data": b""}
    assert await refused(_submit(sessions, quest, "drill", **bad_file)) == NotABuildTask(
        "matmul-again/drill", "exercise"
    )
    first = await _submit(sessions, quest)
    assert await refused(_submit(sessions, quest, **bad_file)) == WrongFileKind("notes.txt", ".txt")
    assert isinstance(await refused(_submit(sessions, quest)), InFlight)
    assert first.position == 1


async def test_one_in_flight_then_the_hourly_limit(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    quest, clock = added_quest(), Clock()
    first = await _submit(sessions, quest, hourly_limit=2, now=clock)
    in_flight = await refused(_submit(sessions, quest, hourly_limit=2, now=clock))
    assert in_flight == InFlight(
        retry_after_s=accept.IN_FLIGHT_RETRY_S, submission_id=first.submission_id
    )
    await _finish(sessions, first)
    clock.moment += timedelta(minutes=10)
    second = await _submit(sessions, quest, hourly_limit=2, now=clock)
    await _finish(sessions, second)
    clock.moment += timedelta(minutes=10)
    # the first of the two leaves the last hour 40 minutes from now
    limited = await refused(_submit(sessions, quest, hourly_limit=2, now=clock))
    assert limited == HourlyLimit(retry_after_s=40 * 60, count=2, limit=2)
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
    assert spec.source == validate_submission("mine.ipynb", NOTEBOOK, LIMITS).source
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

    async def attempt(
        guild_map: GuildMap, guild_id: int = GUILD, number: int = 0, limits: Any = LIMITS
    ) -> None:
        await regrade(
            sessions,
            guild_id=guild_id,
            submission_id=number or queued.submission_id,
            guild_map=guild_map,
            limits=limits,
            moderator_user_id=9,
        )

    mine = queued.submission_id
    on_map = GuildMap(quests=(quest,), phase_titles={})
    assert await refused(attempt(on_map)) == AlreadyBeingGraded(mine)
    await _finish(sessions, queued)
    assert await refused(attempt(on_map, guild_id=GUILD + 1)) == NoSuchSubmission(mine)
    assert await refused(attempt(on_map, number=999)) == NoSuchSubmission(999)
    shipped_only = GuildMap(quests=seed_content().quests, phase_titles={})
    assert await refused(attempt(shipped_only)) == TaskOffTheMap(mine, "matmul-again/three-ways")
    # the map changed the task into an exercise, or the limits shrank: /submit's rules today
    as_exercise = quest.model_dump(mode="json")
    as_exercise["tasks"][0] = {**as_exercise["tasks"][1], "id": "three-ways"}
    assert await refused(
        attempt(GuildMap(quests=(Quest.model_validate(as_exercise),), phase_titles={}))
    ) == CannotRegrade(mine, NotABuildTask("matmul-again/three-ways", "exercise"))
    assert await refused(attempt(on_map, limits=accept.UploadLimits(16, 16))) == CannotRegrade(
        mine, TooLarge("solution.py", len(CORRECT), 16, "py")
    )
    assert await _count(sessions, GradingJob) == 1  # nothing was queued again
    assert await _count(sessions, AuditEntry) == 0
