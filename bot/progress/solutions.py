"""Shared solutions: a member who opts in lets the members who passed the same task read their
passing code (``/solutions``), and reading is recorded so that it never races.

Rules:

- Sharing is per member and server (``members.shares_solutions``, ``/privacy share on|off``),
  off by default.  Nothing is copied anywhere: every page asks again, so turning it off hides
  the member's solutions from the next page on, and a hidden or deleted member's are never
  shown (a hidden member is not listed; a deleted one's submissions are gone).
- Only a member with a passing submission of the task may read its solutions; anyone else is
  refused (``NotPassed``).  What they read: one solution of each other listed member who shares
  and passed the task.  On a speed-ranked task it is that member's fastest passing submission
  (the highest board ratio among their results that rank: today's instrument, not voided),
  and the solutions come in that order (equal ratios: the earlier result first); members whose
  passes have no such result follow, newest pass first.  Otherwise it is their newest passing
  submission, newest first.  ``PAGE`` to a page.
- Reading is recorded the first time a page with a solution is shown: one ``solution_reads``
  row per member and task, holding that moment.  A speed result whose submission was made at
  or after it is ``after_reading`` (``bot.progress.speed_results.record_speed``): marked on the
  boards and ranked below every result made without reading.  Reading never changes XP.
- ``/privacy export`` lists whether the member shares, which of their submissions members can
  read because of it, and the tasks whose solutions they opened; ``/privacy delete`` turns
  sharing off and removes the reads with the rest (``bot.progress.privacy``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Row,
    Subquery,
    and_,
    delete,
    exists,
    false,
    func,
    literal,
    null,
    select,
    true,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.dialect import upsert
from bot.db.models import Member, SolutionRead, SpeedRecord, Submission
from bot.db.states import SubmissionStatus
from bot.progress.members import ensure_member, find_member_id
from graders.base import SPEED_INSTRUMENT, BadVerdict, Verdict

#: solutions to a page: each is an attachment, and Discord takes at most ten to a message
PAGE = 5


@dataclass(frozen=True)
class NotPassed:
    """The reader has no passing submission of the task."""

    task_ref: str


class SolutionsRefused(Exception):
    """Reading the task's solutions was refused; ``refusal`` says why."""

    def __init__(self, refusal: NotPassed) -> None:
        super().__init__(refusal)
        self.refusal = refusal


@dataclass(frozen=True)
class SharedSpeed:
    """The shown solution's ranked speed result."""

    board_ratio: float  # what the boards rank
    ratio: float
    device: str
    after_reading: bool  # its author had read the task's solutions before submitting it
    bound_sentence: str  # the verdict's sentence naming the bound; "" when it named none


@dataclass(frozen=True)
class SharedSolution:
    position: int  # 1-based, over every page
    user_id: int
    display_name: str
    submission_id: int
    submitted_at: datetime
    filename: str  # as uploaded: the presentation makes it safe
    file_kind: str  # "py" | "ipynb"
    code: bytes
    speed: SharedSpeed | None  # None: not speed-ranked, or no result that ranks


@dataclass(frozen=True)
class Overview:
    """What the reader may open before opening it."""

    total: int  # solutions they can read
    opened_at: datetime | None  # when they first read this task's solutions, if ever


@dataclass(frozen=True)
class SolutionsPage:
    task_ref: str
    page: int  # 0-based, clamped into the pages there are
    total: int
    solutions: tuple[SharedSolution, ...]
    opened_at: datetime | None  # the first read of the task: now, on the first page ever

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // PAGE))


async def set_sharing(
    session: AsyncSession, *, guild_id: int, user_id: int, display_name: str, on: bool
) -> bool:
    """Share the member's passing solutions (``on``) or stop; False when it already was so."""
    member = await ensure_member(session, guild_id, user_id, display_name)
    changed = await session.execute(
        update(Member)
        .where(Member.id == member.id, Member.shares_solutions == (false() if on else true()))
        .values(shares_solutions=on)
    )
    return bool(changed.rowcount)  # type: ignore[attr-defined]


async def shares(session: AsyncSession, member_id: int) -> bool:
    """Whether the member shares their passing solutions."""
    return bool(await session.scalar(select(Member.shares_solutions).where(Member.id == member_id)))


async def overview(
    session: AsyncSession, *, guild_id: int, user_id: int, task_ref: str, speed_ranked: bool
) -> Overview:
    """How many solutions the reader may read and whether they read them before; refused
    (``SolutionsRefused``) unless they passed the task."""
    reader = await _reader(session, guild_id, user_id, task_ref)
    count = select(func.count()).select_from(_chosen(guild_id, task_ref, reader, speed_ranked))
    return Overview(await session.scalar(count) or 0, await _opened_at(session, reader, task_ref))


async def open_page(
    session: AsyncSession,
    *,
    guild_id: int,
    user_id: int,
    task_ref: str,
    speed_ranked: bool,
    page: int,
    now: datetime,
) -> SolutionsPage:
    """One page of the solutions the reader may read, recording the read when it shows any
    (see the rules); refused (``SolutionsRefused``) unless they passed the task."""
    reader = await _reader(session, guild_id, user_id, task_ref)
    chosen = _chosen(guild_id, task_ref, reader, speed_ranked)
    total = await session.scalar(select(func.count()).select_from(chosen)) or 0
    page = min(max(page, 0), max(0, -(-total // PAGE) - 1))
    rows = (
        await session.execute(
            select(chosen, Submission.content, Submission.verdict)
            .join(Submission, Submission.id == chosen.c.submission_id)
            .order_by(chosen.c.position)
            .offset(page * PAGE)
            .limit(PAGE)
        )
    ).all()
    if rows:
        await session.execute(
            upsert(session, SolutionRead)
            .values(guild_id=guild_id, member_id=reader, task_ref=task_ref, opened_at=now)
            .on_conflict_do_nothing(index_elements=[SolutionRead.member_id, SolutionRead.task_ref])
        )
    solutions = tuple(
        SharedSolution(
            row.position,
            row.user_id,
            row.display_name,
            row.submission_id,
            row.submitted_at,
            row.filename,
            row.file_kind,
            row.content,
            _speed(row) if row.board_ratio is not None else None,
        )
        for row in rows
    )
    return SolutionsPage(
        task_ref, page, total, solutions, await _opened_at(session, reader, task_ref)
    )


async def _reader(session: AsyncSession, guild_id: int, user_id: int, task_ref: str) -> int:
    """The reader's member id, when they passed the task."""
    member_id = await find_member_id(session, guild_id, user_id)
    passed = member_id is not None and await session.scalar(
        select(
            exists().where(
                Submission.guild_id == guild_id,
                Submission.task_ref == task_ref,
                Submission.status == SubmissionStatus.PASSED,
                Submission.member_id == member_id,
            )
        )
    )
    if member_id is None or not passed:
        raise SolutionsRefused(NotPassed(task_ref))
    return member_id


async def _opened_at(session: AsyncSession, member_id: int, task_ref: str) -> datetime | None:
    return await session.scalar(
        select(SolutionRead.opened_at).where(
            SolutionRead.member_id == member_id, SolutionRead.task_ref == task_ref
        )
    )


def _ranks() -> ColumnElement[bool]:
    """The joined speed result ranks (today's instrument, not voided)."""
    return and_(SpeedRecord.instrument == SPEED_INSTRUMENT, SpeedRecord.voided_at.is_(None))


def _chosen(guild_id: int, task_ref: str, reader: int, speed_ranked: bool) -> Subquery:
    """Each sharing member's one solution, numbered in the order shown (see the rules)."""
    speed = (
        SpeedRecord.board_ratio if speed_ranked else null(),
        SpeedRecord.ratio if speed_ranked else null(),
        SpeedRecord.device if speed_ranked else null(),
        SpeedRecord.after_reading if speed_ranked else literal(False),
        SpeedRecord.created_at if speed_ranked else null(),
    )
    candidates = (
        select(
            Submission.id.label("submission_id"),
            Submission.member_id,
            Submission.created_at.label("submitted_at"),
            Submission.filename,
            Submission.file_kind,
            Member.user_id,
            Member.display_name,
            speed[0].label("board_ratio"),
            speed[1].label("ratio"),
            speed[2].label("device"),
            speed[3].label("after_reading"),
            speed[4].label("measured_at"),
        )
        .join(Member, Member.id == Submission.member_id)
        .where(
            Submission.guild_id == guild_id,
            Submission.task_ref == task_ref,
            Submission.status == SubmissionStatus.PASSED,
            Submission.member_id != reader,
            Member.shares_solutions == true(),
            Member.hidden == false(),
            Member.anonymised_at.is_(None),
        )
    )
    if speed_ranked:
        candidates = candidates.outerjoin(
            SpeedRecord, and_(SpeedRecord.submission_id == Submission.id, _ranks())
        )
    first = candidates.subquery()
    unranked = first.c.board_ratio.is_(None)
    order = (
        unranked,
        first.c.board_ratio.desc(),
        first.c.measured_at,
        first.c.submitted_at.desc(),
        first.c.submission_id.desc(),
    )
    best = select(
        first,
        func.row_number().over(partition_by=first.c.member_id, order_by=order).label("nth"),
    ).subquery()
    unranked = best.c.board_ratio.is_(None)
    return (
        select(
            *(column for column in best.c if column.name != "nth"),
            func.row_number()
            .over(
                order_by=(
                    unranked,
                    best.c.board_ratio.desc(),
                    best.c.measured_at,
                    best.c.submitted_at.desc(),
                    best.c.submission_id.desc(),
                )
            )
            .label("position"),
        )
        .where(best.c.nth == 1)
        .subquery()
    )


def _speed(row: Row[Any]) -> SharedSpeed:
    return SharedSpeed(
        row.board_ratio,
        row.ratio,
        row.device,
        bool(row.after_reading),
        _bound_sentence(row.verdict),
    )


def _bound_sentence(stored: object) -> str:
    """The sentence the submission's verdict named its bound with ("" when none, or when the
    stored verdict cannot be read: the solution is still worth reading)."""
    if not isinstance(stored, dict):
        return ""
    try:
        verdict = Verdict.from_json(stored)
    except BadVerdict:
        return ""
    return verdict.speed.bound_sentence if verdict.speed is not None else ""


@dataclass(frozen=True)
class ExportedShare:
    """A passing submission members who passed its task can read now."""

    submission_id: int
    task_ref: str


@dataclass(frozen=True)
class ExportedRead:
    """A task whose shared solutions the member opened, and when first."""

    task_ref: str
    opened_at: datetime


@dataclass(frozen=True)
class ExportedSharing:
    """The member's sharing, as ``/privacy export`` lists it."""

    shares_solutions: bool
    #: what members who passed the same task can read (none while not sharing, or hidden);
    #: ``/solutions`` shows one of these per task
    readable: tuple[ExportedShare, ...]
    opened: tuple[ExportedRead, ...]


async def exported_sharing(session: AsyncSession, member: Member) -> ExportedSharing:
    """What the member shares and which tasks' solutions they read (see the rules)."""
    on = await shares(session, member.id)
    readable: tuple[ExportedShare, ...] = ()
    if on and not member.hidden and member.anonymised_at is None:
        readable = tuple(
            ExportedShare(*row)
            for row in await session.execute(
                select(Submission.id, Submission.task_ref)
                .where(
                    Submission.member_id == member.id,
                    Submission.status == SubmissionStatus.PASSED,
                )
                .order_by(Submission.id)
            )
        )
    opened = tuple(
        ExportedRead(*row)
        for row in await session.execute(
            select(SolutionRead.task_ref, SolutionRead.opened_at)
            .where(SolutionRead.member_id == member.id)
            .order_by(SolutionRead.task_ref)
        )
    )
    return ExportedSharing(on, readable, opened)


async def forget_sharing(session: AsyncSession, member_id: int) -> None:
    """A deletion: sharing off, the member's reads gone (their submissions go with the rest)."""
    await session.execute(delete(SolutionRead).where(SolutionRead.member_id == member_id))
    await session.execute(
        update(Member).where(Member.id == member_id).values(shares_solutions=False)
    )
