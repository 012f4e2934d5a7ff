"""The bot's side of grading: turn an upload into a queued, self-contained job, within limits.

``submit`` is the use case behind ``/submit``, "Submit solution" and ``POST /api/v1/submissions``;
the front ends only download and reply, so the flow is tested without Discord.  Every rule is
decided here, once: the task (``find_build_task``), the upload (``submission_input``), the
member's pace (``queue_submission``).  A "no" is a typed ``Refused`` (``bot.intake.refusals``)
that each front end words its own way.  A front end may ask ``find_build_task`` and
``submission_input.check_upload`` early, to answer before a download, but ``submit`` decides
them all again.  The job stores everything grading needs (``JobSpec``), built from the
server's own map: a quest a moderator added is graded like a shipped one, by a worker on any
host.

Runs in the bot process: no torch, no Discord, no learner code.  The member's row is locked
for the checks and the insert, so two ``/submit`` at once cannot both slip past the
one-in-flight rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import PurePath
from typing import Protocol

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.content import AnyTask, BuildTask, Quest, TaskRef
from bot.content.hashing import version_hash
from bot.curriculum.guild_map import GuildMap
from bot.db.models import Submission
from bot.db.states import IN_FLIGHT
from bot.db.types import utcnow
from bot.intake.refusals import (
    HourlyLimit,
    InFlight,
    NotABuildTask,
    Refused,
    UnknownGrader,
    UnknownTask,
)
from bot.intake.submission_input import PreparedSource, UploadLimits, validate_submission
from bot.jobs import heartbeat, queue
from bot.jobs.capabilities import Requirements
from bot.jobs.job_spec import JobSpec
from bot.progress.members import ensure_member, lock_member

#: when to try again after "one in flight": a guess, as grading takes seconds to a minute
IN_FLIGHT_RETRY_S = 30
#: how long Discord lets a bot edit its reply to an interaction
INTERACTION_TOKEN_LIFETIME = timedelta(minutes=15)


class TaskLookup(Protocol):
    """Where task refs are looked up: a server's map, or the content ``brrrbot grade`` reads."""

    def find_task(self, ref: str, /) -> tuple[Quest, AnyTask]: ...


@dataclass(frozen=True)
class Submitter:
    """Who uploads: the chat user, made a member of the server on first use."""

    user_id: int
    display_name: str


@dataclass(frozen=True)
class Reply:
    """Where the verdict goes: the interaction while its token lives, else DM or channel."""

    token: str
    created_at: datetime
    channel_id: int | None


@dataclass(frozen=True)
class Queued:
    submission_id: int
    job_id: int
    task_ref: str
    position: int
    requirements: Requirements  # what grading it needs from a worker
    #: False when no worker able to grade it has been seen lately: tell the member now
    worker_seen: bool = True


def find_build_task(tasks: TaskLookup, ref: str) -> tuple[Quest, BuildTask]:
    """The build task ``ref`` names, or ``Refused`` (``UnknownTask``, ``NotABuildTask``)."""
    try:
        quest, task = tasks.find_task(ref)
    except KeyError:
        raise Refused(UnknownTask(ref)) from None
    if not isinstance(task, BuildTask):
        raise Refused(NotABuildTask(ref, task.kind))
    return quest, task


def prepare_job(
    task_ref: str, task: BuildTask, filename: str, data: bytes, limits: UploadLimits
) -> tuple[PreparedSource, JobSpec]:
    """Validate the upload (the only time it is) and build the job's spec; ``Refused`` says
    what is wrong.  ``/submit``, ``/admin regrade`` and ``brrrbot grade`` come through here."""
    prepared = validate_submission(filename, data, limits)
    try:
        spec = JobSpec.build(task_ref, task, prepared, PurePath(filename).name[:255])
    except KeyError:  # content is checked against the registry: only a broken install
        raise Refused(UnknownGrader(task_ref, task.grader)) from None
    return prepared, spec


async def submit(
    sessions: async_sessionmaker[AsyncSession],
    *,
    guild_id: int,
    submitter: Submitter,
    guild_map: GuildMap,
    task_ref: str,
    filename: str,
    data: bytes,
    limits: UploadLimits,
    hourly_limit: int,
    reply: Reply | None,
    now: Callable[[], datetime],
) -> Queued:
    """Queue ``data`` for grading as the build task ``task_ref`` of the server's map, or raise
    ``Refused`` saying which rule said no.

    ``now`` is read once the transaction holds the write lock, so the recorded time is when
    the checks ran: never before the member's previous verdict.
    """
    quest, task = find_build_task(guild_map, task_ref)
    task_ref = str(TaskRef(quest.id, task.id))
    prepared, spec = prepare_job(task_ref, task, filename, data, limits)
    async with sessions() as session, session.begin():
        member = await ensure_member(session, guild_id, submitter.user_id, submitter.display_name)
        return await queue_submission(
            session,
            guild_id=guild_id,
            member_id=member.id,
            quest_version=version_hash(quest),
            filename=filename,
            data=data,
            prepared=prepared,
            spec=spec,
            hourly_limit=hourly_limit,
            reply=reply,
            now=now(),
        )


async def queue_submission(
    session: AsyncSession,
    *,
    guild_id: int,
    member_id: int,
    quest_version: str | None,
    filename: str,
    data: bytes,
    prepared: PreparedSource,
    spec: JobSpec,
    hourly_limit: int,
    reply: Reply | None,
    now: datetime,
) -> Queued:
    """Store the upload and its job in the caller's transaction, or ``Refused`` (``InFlight``,
    ``HourlyLimit``)."""
    await lock_member(session, guild_id, member_id)
    busy = await session.scalar(
        select(Submission.id)
        .where(Submission.member_id == member_id, Submission.status.in_(IN_FLIGHT))
        .limit(1)
    )
    if busy is not None:
        raise Refused(InFlight(retry_after_s=IN_FLIGHT_RETRY_S, submission_id=busy))
    hour_ago = now - timedelta(hours=1)
    recent = (
        await session.execute(
            select(func.count(), func.min(Submission.created_at)).where(
                Submission.member_id == member_id, Submission.created_at > hour_ago
            )
        )
    ).one()
    count, oldest = recent
    if count >= hourly_limit:
        wait_s = max(math.ceil((oldest + timedelta(hours=1) - now).total_seconds()), 1)
        raise Refused(HourlyLimit(retry_after_s=wait_s, count=count, limit=hourly_limit))
    submission = Submission(
        guild_id=guild_id,
        member_id=member_id,
        task_ref=spec.task_ref,
        quest_version=quest_version,
        filename=filename[:255],
        file_kind=prepared.kind,
        content=data,
        size_bytes=len(data),
        sha256=prepared.sha256,
        created_at=now,
        reply_token=reply.token if reply else None,
        reply_expires_at=reply.created_at + INTERACTION_TOKEN_LIFETIME if reply else None,
        reply_channel_id=reply.channel_id if reply else None,
    )
    session.add(submission)
    await session.flush()
    job = await queue.enqueue(session, submission.id, spec)
    # heartbeats are stamped with the real time by other processes, so compare with that
    seen = await heartbeat.capable_worker_seen(session, spec.requirements, utcnow())
    return Queued(
        submission.id,
        job.id,
        spec.task_ref,
        await queue.position(session, job.id),
        spec.requirements,
        seen,
    )
