"""Speed boards: each member's best speed trial of a task, ranked per device class.

Rules:

- A settled ``passed`` verdict that carries a speed result records one row in ``speed_results``
  (``record_speed``), in the settling transaction.  The row is keyed by its submission, so
  settling again, or a second process settling the same verdict, leaves that one row; a
  regrade that passes with a new trial replaces it (any other regrade leaves it).  A speed
  result never pays XP: it only ranks.
- What ranks is a row's ``board_ratio`` (``SpeedResult.ranked_ratio``): a lower confidence bound
  of the trial's median ratio (reference time / learner time: 2.0 is twice as fast as the
  reference), so a lucky run ranks little higher than an ordinary one.  "Ratio" below means it.
- Only results of today's instrument (``graders.base.SPEED_INSTRUMENT``) rank.  Rows of an older
  instrument are retired: they stay (history, and the member's export lists them) but are on no
  board and never the fastest of the week; a board counts the listed members who have only
  retired results on its task (``SpeedBoard.retired``), so it can tell them to resubmit.
- Ratios compare only on the same kind of hardware, so a board has one ranking per device class
  (a GPU name or a CPU model).  Within a device class a member counts once, with their best
  ratio; on equal ratios the earlier run is their best.  Order: higher ratio first; on equal
  ratios, whoever got there first; then the lower member id, so ranks are distinct positions.
  Device classes come with the most members first, then by name.
- A member hidden from the boards (``/privacy hide``, or anonymised) is on no speed board and
  in no "fastest of the week": the ranks close up around them.
- Fastest of the week: among the results recorded in the week (``[start, end)`` of a
  ``bot.progress.periods`` week) by today's instrument, the task with the most of them (ties:
  the lower task ref), and its best result of that week.  Only speed-ranked tasks ever get
  results, so every task with results counts.
- A result a moderator voided (``bot.progress.speed_voids``) is on no board, never the fastest
  of the week, and gives its task no board of its own (``counts``): the member's best unvoided
  result ranks instead, and a member with only void results on a task is not on its board (nor
  counted as retired).  The member's export lists it with the void.
- Reading is not racing: a result whose submission was made after its member opened the task's
  shared solutions (``bot.progress.solutions``) is ``after_reading``, decided when it is
  recorded.  It is marked wherever it is shown and ranks below every result made without
  reading: within a device class, a member's best is their best result made before reading
  when they have one; the ranking puts every such best first, then the bests made after
  reading; the fastest of the week prefers a result made before reading the same way.  The
  ratios are untouched (what ranks within each tier is still the board ratio) and XP is not
  affected.
- Whether a task is speed-ranked is asked of ``is_speed_ranked`` alone.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, Select, bindparam, false, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from bot.db.dialect import upsert
from bot.db.models import Member, SolutionRead, SpeedRecord
from bot.progress.periods import Period
from graders.base import SPEED_INSTRUMENT, Bound, SpeedResult
from graders.bottleneck import RooflineFigures

#: entries shown per device class
PER_DEVICE = 10


def is_speed_ranked(task: object) -> bool:
    """Whether a task's passing submissions get a speed trial (a build task with ``speed``)."""
    return getattr(task, "speed", None) is not None


@dataclass(frozen=True)
class SpeedEntry:
    rank: int
    member_id: int
    user_id: int
    display_name: str
    board_ratio: float  # what ranks: a lower bound of ``ratio``
    ratio: float  # the trial's median reference / learner: above 1 is faster than the reference
    learner_s: float
    reference_s: float
    achieved_at: datetime  # when this best run was recorded
    after_reading: bool = False  # submitted after its member read the shared solutions
    #: where the run sat on the roofline (None when its trial placed nothing on one)
    figures: RooflineFigures | None = None


@dataclass(frozen=True)
class DeviceBoard:
    device: str
    ranked: int  # members with a result on this device class
    entries: tuple[SpeedEntry, ...]  # the first ``PER_DEVICE`` of them


@dataclass(frozen=True)
class SpeedBoard:
    guild_id: int
    task_ref: str
    devices: tuple[DeviceBoard, ...]
    retired: int = 0  # listed members whose results on the task are all retired (see the rules)

    @property
    def empty(self) -> bool:
        """Nobody ranks (``retired`` may still count members)."""
        return not self.devices

    @property
    def shows_after_reading(self) -> bool:
        """A run shown was submitted after its member read the shared solutions."""
        return any(entry.after_reading for device in self.devices for entry in device.entries)


@dataclass(frozen=True)
class FastestOfWeek:
    week_key: str
    task_ref: str
    results: int  # the task's results that week (listed members)
    member_id: int
    user_id: int
    display_name: str
    board_ratio: float  # what ranked
    ratio: float
    device: str
    achieved_at: datetime
    figures: RooflineFigures | None = None  # for its roofline picture; None if never measured
    after_reading: bool = False  # submitted after its member read the shared solutions


async def record_speed(
    session: AsyncSession,
    *,
    guild_id: int,
    member_id: int,
    submission_id: int,
    task_ref: str,
    speed: SpeedResult,
    submitted_at: datetime,
    now: datetime,
) -> None:
    """Record a passing submission's speed trial: one row per submission, so settling it again
    changes nothing, and a regrade's trial replaces the one before it.  ``submitted_at``, when
    the submission was made, decides whether it came after reading (see the rules)."""
    opened_at = await session.scalar(
        select(SolutionRead.opened_at).where(
            SolutionRead.member_id == member_id, SolutionRead.task_ref == task_ref
        )
    )
    values = {
        "device": speed.device,
        "instrument": speed.instrument,
        "ratio": speed.ratio,
        "board_ratio": speed.ranked_ratio,
        "learner_s": speed.learner_s,
        "reference_s": speed.reference_s,
        "spread": speed.spread,
        "pairs": speed.pairs,
        "created_at": now,
        "after_reading": opened_at is not None and opened_at <= submitted_at,
        **{name: getattr(speed, name) for name in _FIGURES},
    }
    statement = upsert(session, SpeedRecord).values(
        guild_id=guild_id,
        member_id=member_id,
        submission_id=submission_id,
        task_ref=task_ref,
        **values,
    )
    await session.execute(
        statement.on_conflict_do_update(index_elements=[SpeedRecord.submission_id], set_=values)
    )


#: what places a result on a roofline: stored as the worker measured it (NULL before 0011)
_FIGURES = (
    "moved_bytes",
    "flops",
    "achieved_gbs",
    "reference_gbs",
    "achieved_gflops",
    "reference_gflops",
    "peak_gbs",
    "peak_gflops",
    "bound",
)


def stored_figures(row: Any) -> RooflineFigures | None:
    """A stored result's roofline figures (from anything with the ``_FIGURES`` attributes: a
    row, an export); None for one stored without them (before 0011) or that could not be
    placed (no bandwidth roof known where it ran)."""
    if (
        row.moved_bytes is None
        or row.flops is None
        or row.achieved_gflops is None
        or row.peak_gbs is None
        or not row.moved_bytes
    ):
        return None
    return RooflineFigures(
        row.moved_bytes,
        row.flops,
        row.achieved_gflops,
        row.reference_gflops,
        row.peak_gbs,
        row.peak_gflops,
        Bound(row.bound) if row.bound is not None else None,
    )


def _listed() -> tuple[ColumnElement[bool], ...]:
    """The member (joined) is on the public boards."""
    return (Member.hidden == false(), Member.anonymised_at.is_(None))


def counts() -> ColumnElement[bool]:
    """The row is not voided by a moderator (see the rules)."""
    return SpeedRecord.voided_at.is_(None)


def _ranks() -> ColumnElement[bool]:
    """The row was measured by today's instrument (any other is retired: see the rules) and
    is not voided."""
    return (SpeedRecord.instrument == SPEED_INSTRUMENT) & counts()


@functools.cache
def _board_query() -> Select[Any]:
    """The board's statement, built once (its parameters are bound at each execution: building
    a statement of three nested selects costs more than SQLite takes to run it)."""
    best = (
        select(
            *(getattr(SpeedRecord, name) for name in _FIGURES),
            SpeedRecord.member_id,
            SpeedRecord.device,
            SpeedRecord.board_ratio,
            SpeedRecord.ratio,
            SpeedRecord.learner_s,
            SpeedRecord.reference_s,
            SpeedRecord.created_at.label("achieved_at"),
            SpeedRecord.after_reading,
            func.row_number()
            .over(
                partition_by=(SpeedRecord.member_id, SpeedRecord.device),
                order_by=(
                    SpeedRecord.after_reading,  # made before reading first: see the rules
                    SpeedRecord.board_ratio.desc(),
                    SpeedRecord.created_at,
                    SpeedRecord.id,
                ),
            )
            .label("nth"),
        )
        .join(Member, Member.id == SpeedRecord.member_id)
        .where(
            SpeedRecord.guild_id == bindparam("guild_id"),
            SpeedRecord.task_ref == bindparam("task_ref"),
            _ranks(),
            *_listed(),
        )
        .subquery()
    )
    ranked = (
        select(
            *(best.c[name] for name in _FIGURES),
            best.c.member_id,
            best.c.device,
            best.c.board_ratio,
            best.c.ratio,
            best.c.learner_s,
            best.c.reference_s,
            best.c.achieved_at,
            best.c.after_reading,
            func.row_number()
            .over(
                partition_by=best.c.device,
                order_by=(
                    best.c.after_reading,
                    best.c.board_ratio.desc(),
                    best.c.achieved_at,
                    best.c.member_id,
                ),
            )
            .label("rank"),
            func.count().over(partition_by=best.c.device).label("ranked"),
        )
        .where(best.c.nth == 1)
        .subquery()
    )
    return (
        select(
            ranked.c.device,
            ranked.c.ranked,
            ranked.c.rank,
            ranked.c.member_id,
            Member.user_id,
            Member.display_name,
            ranked.c.board_ratio,
            ranked.c.ratio,
            ranked.c.learner_s,
            ranked.c.reference_s,
            ranked.c.achieved_at,
            ranked.c.after_reading,
            *(ranked.c[name] for name in _FIGURES),
        )
        .join(Member, Member.id == ranked.c.member_id)
        .where(ranked.c.rank <= bindparam("per_device"))
        .order_by(ranked.c.device, ranked.c.rank)
    )


async def speed_board(
    session: AsyncSession,
    *,
    guild_id: int,
    task_ref: str,
    per_device: int = PER_DEVICE,
) -> SpeedBoard:
    """The board of one task: per device class, the first ``per_device`` listed members by
    their best ratio, each with its run's roofline figures, and how many have only retired
    results (see the rules)."""
    params = {"guild_id": guild_id, "task_ref": task_ref, "per_device": per_device}
    devices = _by_device((await session.execute(_board_query(), params)).all())
    return SpeedBoard(guild_id, task_ref, devices, await _only_retired(session, guild_id, task_ref))


async def _only_retired(session: AsyncSession, guild_id: int, task_ref: str) -> int:
    """Listed members with unvoided results on the task, none of them of today's
    instrument."""
    ranking = aliased(SpeedRecord)
    ranks = select(ranking.id).where(
        ranking.member_id == SpeedRecord.member_id,
        ranking.guild_id == guild_id,
        ranking.task_ref == task_ref,
        ranking.instrument == SPEED_INSTRUMENT,
        ranking.voided_at.is_(None),
    )
    query = (
        select(func.count(SpeedRecord.member_id.distinct()))
        .join(Member, Member.id == SpeedRecord.member_id)
        .where(
            SpeedRecord.guild_id == guild_id,
            SpeedRecord.task_ref == task_ref,
            counts(),
            ~ranks.exists(),
            *_listed(),
        )
    )
    return await session.scalar(query) or 0


def _by_device(rows: Sequence[Row[Any]]) -> tuple[DeviceBoard, ...]:
    grouped: dict[str, list[SpeedEntry]] = {}
    sizes: dict[str, int] = {}
    entry_fields = len(dataclasses.fields(SpeedEntry)) - 1  # all but the figures
    for row in rows:
        device, ranked, *entry = row[: 2 + entry_fields]
        grouped.setdefault(device, []).append(SpeedEntry(*entry, stored_figures(row)))
        sizes[device] = ranked
    order = sorted(grouped, key=lambda device: (-sizes[device], device))
    return tuple(DeviceBoard(device, sizes[device], tuple(grouped[device])) for device in order)


async def speed_task_refs(session: AsyncSession, guild_id: int) -> tuple[str, ...]:
    """The tasks that have a ranked speed result of a listed member in the server, in ref
    order."""
    query = (
        select(SpeedRecord.task_ref)
        .distinct()
        .join(Member, Member.id == SpeedRecord.member_id)
        .where(SpeedRecord.guild_id == guild_id, _ranks(), *_listed())
        .order_by(SpeedRecord.task_ref)
    )
    return tuple(await session.scalars(query))


async def fastest_of_week(
    session: AsyncSession, *, guild_id: int, week: Period
) -> FastestOfWeek | None:
    """The week's most tried speed task and its best result that week, among results of today's
    instrument; None without any."""
    if week.kind != "week":
        raise ValueError(f"the fastest of the week needs a week, not a {week.kind}")
    in_week = (
        SpeedRecord.guild_id == guild_id,
        SpeedRecord.created_at >= week.start,
        SpeedRecord.created_at < week.end,
        _ranks(),
        *_listed(),
    )
    results = func.count().label("results")
    busiest = (
        await session.execute(
            select(SpeedRecord.task_ref, results)
            .join(Member, Member.id == SpeedRecord.member_id)
            .where(*in_week)
            .group_by(SpeedRecord.task_ref)
            .order_by(results.desc(), SpeedRecord.task_ref)
            .limit(1)
        )
    ).first()
    if busiest is None:
        return None
    task_ref, count = busiest
    best = (
        await session.execute(
            select(SpeedRecord, Member.user_id, Member.display_name)
            .join(Member, Member.id == SpeedRecord.member_id)
            .where(*in_week, SpeedRecord.task_ref == task_ref)
            .order_by(
                SpeedRecord.after_reading,
                SpeedRecord.board_ratio.desc(),
                SpeedRecord.created_at,
                SpeedRecord.id,
            )
            .limit(1)
        )
    ).first()
    if best is None:
        return None
    row, user_id, display_name = best
    return FastestOfWeek(
        week.key,
        task_ref,
        count,
        row.member_id,
        user_id,
        display_name,
        row.board_ratio,
        row.ratio,
        row.device,
        row.created_at,
        stored_figures(row),
        row.after_reading,
    )


@dataclass(frozen=True)
class ExportedSpeedResult:
    """A member's own speed trial, as ``/privacy export`` lists it."""

    submission_id: int
    task_ref: str
    device: str
    ratio: float
    learner_s: float
    reference_s: float
    spread: float
    pairs: int
    instrument: int  # which instrument measured it (an older one's results no longer rank)
    board_ratio: float  # what the boards rank
    recorded_at: datetime
    # where it sat on the roofline, and the bound named (None before they were kept)
    moved_bytes: int | None
    flops: int | None
    achieved_gbs: float | None
    reference_gbs: float | None
    achieved_gflops: float | None
    reference_gflops: float | None
    peak_gbs: float | None
    peak_gflops: float | None
    bound: str | None
    # a moderator's void: when and why (None: it counts); a void result ranks nowhere
    voided_at: datetime | None = None
    void_reason: str | None = None
    after_reading: bool = False  # submitted after reading the task's shared solutions


async def member_speed_results(
    session: AsyncSession, member_id: int
) -> tuple[ExportedSpeedResult, ...]:
    """Every speed result of one member, oldest first (hidden or not, void or not: it is their
    own)."""
    query = (
        select(
            SpeedRecord.submission_id,
            SpeedRecord.task_ref,
            SpeedRecord.device,
            SpeedRecord.ratio,
            SpeedRecord.learner_s,
            SpeedRecord.reference_s,
            SpeedRecord.spread,
            SpeedRecord.pairs,
            SpeedRecord.instrument,
            SpeedRecord.board_ratio,
            SpeedRecord.created_at,
            *(getattr(SpeedRecord, name) for name in _FIGURES),
            SpeedRecord.voided_at,
            SpeedRecord.void_reason,
            SpeedRecord.after_reading,
        )
        .where(SpeedRecord.member_id == member_id)
        .order_by(SpeedRecord.id)
    )
    return tuple(ExportedSpeedResult(*row) for row in await session.execute(query))
