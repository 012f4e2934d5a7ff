"""A member's privacy in one server: hide from the boards, show again, export, delete.

Rules:

- Hiding sets ``members.hidden`` and unlists every total of the member in the same transaction
  (``bot.progress.totals.set_listed``), so no page, rank, weekly post or chart counts them; their
  own profile still shows their place.  Showing undoes it.  Both are idempotent.
- An export is everything kept about the caller in the server, as a typed tree that
  ``export_json`` writes out: the member row, totals, every ledger row, every submission with its
  code, verdict and grading jobs, quiz results, completions, speed results, the roles the bot
  believes it gave them, the weeks they were champion, and their sharing (whether they share,
  the submissions members can read because of it, the tasks whose solutions they opened).
  Quiz answers are marked when given; only the result (the ledger row) is kept, never the
  text typed.
- A deletion leaves no key back to the person.  In one transaction it removes the member's
  submissions (their grading jobs go with them by the foreign key's cascade), their speed
  results, the fingerprints of their code and every near-copy pair naming them (all deleted
  outright, not left to the cascade), the record of which tasks' solutions they read, and
  their API token, turns their sharing off, takes their id from the weeks they were champion
  of, and anonymises the member row: the append-only ledger keeps
  its rows, pointing at a row that no longer names anyone (``user_id = -id``, no display name,
  hidden, ``anonymised_at`` set), whose totals are unlisted for good.  Audit rows about the
  user (``user:<id>``, or the bare id older versions wrote) are rewritten to name that row
  (``member:<row id>``); their details hold the row id, amounts and the moderator's reason,
  never the user id, and the moderators stay named as their actors.  The user id is then kept
  only in the role queue and in ``role_grants``, because the bot needs it to take back the
  roles it gave (``bot.progress.role_sync``); once that has run, it is nowhere in the
  database.  Their next command starts a fresh member row at 0 XP.  An audit row records that
  a deletion happened and how much went, not whose.  A second deletion finds nothing and does
  nothing.  On SQLite the engine zeroes freed space (``secure_delete``);
  ``bot.db.engine.checkpoint_wal`` then clears the old page images from the write-ahead log,
  after the deletion and again after the role sync.
- What stays: the ledger rows (amount, source, task, time and the reason as a moderator typed
  it), the anonymised row's totals, the moderators' audit rows and their ids as actors (a
  member who was a moderator stays named as the actor of what they did as one), and the
  member's records in other servers.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from bot import audit
from bot.db.models import (
    ApiToken,
    AuditEntry,
    GradingJob,
    Member,
    MemberXp,
    NearCopy,
    RoleGrant,
    SolutionFingerprint,
    SpeedRecord,
    Submission,
    WeeklyChampion,
    XpEntry,
)
from bot.db.states import JobStatus, SubmissionStatus
from bot.progress.champions import NOBODY
from bot.progress.ledger import COMPLETION_SOURCES
from bot.progress.members import ensure_member, find_member_id, lock_member
from bot.progress.role_queue import queue_users
from bot.progress.solutions import ExportedSharing, exported_sharing, forget_sharing
from bot.progress.speed_results import ExportedSpeedResult, member_speed_results
from bot.progress.totals import set_listed

DELETE_ACTION = "privacy-delete"
#: who the audit row says acted: nobody in particular (the column is NOT NULL)
ANONYMOUS_ACTOR = 0


async def hide(session: AsyncSession, *, guild_id: int, user_id: int, display_name: str) -> bool:
    """Take the user off every board of the server; False when they already were."""
    member = await ensure_member(session, guild_id, user_id, display_name)
    return await _set_hidden(session, guild_id, member.id, hidden=True)


async def show(session: AsyncSession, *, guild_id: int, user_id: int) -> bool:
    """Put the user back on the boards; False when they were not hidden."""
    member_id = await find_member_id(session, guild_id, user_id)
    if member_id is None:
        return False
    return await _set_hidden(session, guild_id, member_id, hidden=False)


async def _set_hidden(
    session: AsyncSession, guild_id: int, member_id: int, *, hidden: bool
) -> bool:
    # The row lock orders this against awards, which lock the member before touching totals.
    member = await lock_member(session, guild_id, member_id)
    if member.hidden == hidden:
        return False
    await session.execute(update(Member).where(Member.id == member_id).values(hidden=hidden))
    await set_listed(session, guild_id=guild_id, member_id=member_id, listed=not hidden)
    return True


@dataclass(frozen=True)
class ExportedMember:
    user_id: int
    display_name: str
    hidden: bool
    first_seen_at: datetime


@dataclass(frozen=True)
class ExportedTotal:
    period_kind: str  # all | week | month
    period_key: str
    xp: int
    reached_at: datetime
    listed: bool


@dataclass(frozen=True)
class ExportedLedgerRow:
    id: int
    created_at: datetime
    amount: int
    source: str
    reason: str
    reference: str | None


@dataclass(frozen=True)
class ExportedGradingJob:
    id: int
    status: JobStatus
    attempts: int
    created_at: datetime
    finished_at: datetime | None
    error: str | None


@dataclass(frozen=True)
class ExportedSubmission:
    id: int
    created_at: datetime
    task_ref: str
    filename: str
    file_kind: str
    size_bytes: int
    sha256: str
    code: str
    status: SubmissionStatus
    score: float | None
    verdict: dict[str, Any] | None
    finished_at: datetime | None
    award: dict[str, Any] | None
    delivered_at: datetime | None
    delivered_via: str | None
    grading_jobs: tuple[ExportedGradingJob, ...]


@dataclass(frozen=True)
class ExportedQuizResult:
    """A marked quiz attempt that paid XP (the ledger row; the typed answers are not kept)."""

    task_ref: str
    xp: int
    result: str
    answered_at: datetime


@dataclass(frozen=True)
class ExportedCompletion:
    task_ref: str
    source: str  # task | quiz | self
    xp: int
    completed_at: datetime


@dataclass(frozen=True)
class MemberExport:
    guild_id: int
    exported_at: datetime
    member: ExportedMember
    totals: tuple[ExportedTotal, ...]
    ledger: tuple[ExportedLedgerRow, ...]
    submissions: tuple[ExportedSubmission, ...]
    quiz_results: tuple[ExportedQuizResult, ...]
    completions: tuple[ExportedCompletion, ...]
    role_ids_given: tuple[int, ...]
    champion_weeks: tuple[str, ...]
    speed_results: tuple[ExportedSpeedResult, ...] = ()
    sharing: ExportedSharing | None = None  # what they share and whose solutions they read


async def export(
    session: AsyncSession, *, guild_id: int, user_id: int, now: datetime
) -> MemberExport | None:
    """Everything kept about the user in the server; None when nothing is."""
    member = await session.scalar(
        select(Member).where(Member.guild_id == guild_id, Member.user_id == user_id)
    )
    if member is None:
        return None
    ledger = tuple(
        ExportedLedgerRow(row.id, row.created_at, row.amount, row.source, row.reason, row.reference)
        for row in await session.scalars(
            select(XpEntry).where(XpEntry.member_id == member.id).order_by(XpEntry.id)
        )
    )
    return MemberExport(
        guild_id=guild_id,
        exported_at=now,
        member=ExportedMember(user_id, member.display_name, member.hidden, member.created_at),
        totals=await _totals(session, member.id),
        ledger=ledger,
        submissions=await _submissions(session, member.id),
        quiz_results=tuple(
            ExportedQuizResult(row.reference or "", row.amount, row.reason, row.created_at)
            for row in ledger
            if row.source == "quiz"
        ),
        completions=_completions(ledger),
        role_ids_given=tuple(
            await session.scalars(
                select(RoleGrant.role_id)
                .where(RoleGrant.guild_id == guild_id, RoleGrant.user_id == user_id)
                .order_by(RoleGrant.role_id)
            )
        ),
        champion_weeks=tuple(
            await session.scalars(
                select(WeeklyChampion.period)
                .where(WeeklyChampion.guild_id == guild_id, WeeklyChampion.user_id == user_id)
                .order_by(WeeklyChampion.period)
            )
        ),
        speed_results=await member_speed_results(session, member.id),
        sharing=await exported_sharing(session, member),
    )


async def _totals(session: AsyncSession, member_id: int) -> tuple[ExportedTotal, ...]:
    rows = await session.execute(
        select(
            MemberXp.period_kind,
            MemberXp.period_key,
            MemberXp.xp,
            MemberXp.reached_at,
            MemberXp.listed,
        )
        .where(MemberXp.member_id == member_id)
        .order_by(MemberXp.period_kind, MemberXp.period_key)
    )
    return tuple(ExportedTotal(*row) for row in rows)


async def _submissions(session: AsyncSession, member_id: int) -> tuple[ExportedSubmission, ...]:
    submissions = list(
        await session.scalars(
            select(Submission).where(Submission.member_id == member_id).order_by(Submission.id)
        )
    )
    jobs: dict[int, list[ExportedGradingJob]] = {}
    for job in await session.scalars(
        select(GradingJob)
        .where(GradingJob.submission_id.in_([s.id for s in submissions]))
        .order_by(GradingJob.id)
    ):
        jobs.setdefault(job.submission_id, []).append(
            ExportedGradingJob(
                job.id, job.status, job.attempts, job.created_at, job.finished_at, job.error
            )
        )
    return tuple(
        ExportedSubmission(
            id=s.id,
            created_at=s.created_at,
            task_ref=s.task_ref,
            filename=s.filename,
            file_kind=s.file_kind,
            size_bytes=s.size_bytes,
            sha256=s.sha256,
            code=s.content.decode("utf-8", errors="replace"),  # accepted only as UTF-8 text
            status=s.status,
            score=s.score,
            verdict=s.verdict,
            finished_at=s.finished_at,
            award=s.award,
            delivered_at=s.delivered_at,
            delivered_via=s.delivered_via,
            grading_jobs=tuple(jobs.get(s.id, ())),
        )
        for s in submissions
    )


def _completions(ledger: tuple[ExportedLedgerRow, ...]) -> tuple[ExportedCompletion, ...]:
    """Tasks that paid XP, each with its total and the time it first paid (ledger order)."""
    paid: dict[str, int] = {}
    first: dict[str, ExportedLedgerRow] = {}
    for row in ledger:
        if row.source in COMPLETION_SOURCES and row.reference is not None:
            paid[row.reference] = paid.get(row.reference, 0) + row.amount
            if row.amount > 0:
                first.setdefault(row.reference, row)
    return tuple(
        ExportedCompletion(ref, first[ref].source, xp, first[ref].created_at)
        for ref, xp in sorted(paid.items())
        if xp > 0
    )


def export_json(data: MemberExport) -> bytes:
    """The export as an indented UTF-8 JSON document (times in ISO 8601 with their offset)."""
    return json.dumps(dataclasses.asdict(data), default=_iso, indent=2, ensure_ascii=False).encode()


@dataclass(frozen=True)
class ExportFile:
    filename: str
    data: bytes


def export_file(data: MemberExport, *, max_bytes: int) -> ExportFile | None:
    """The export as one file within ``max_bytes``: plain JSON, else gzipped JSON (code
    compresses well), else None."""
    body = export_json(data)
    name = f"brrrbot-export-{data.guild_id}.json"
    if len(body) <= max_bytes:
        return ExportFile(name, body)
    packed = gzip.compress(body, mtime=0)
    return ExportFile(f"{name}.gz", packed) if len(packed) <= max_bytes else None


def _iso(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not part of an export")


@dataclass(frozen=True)
class Deletion:
    """What one deletion did; all zero and ``found`` False when nothing was kept."""

    found: bool
    submissions: int
    grading_jobs: int
    ledger_rows_anonymised: int


async def _uncrown(session: AsyncSession, guild_id: int, user_id: int) -> None:
    """Take the user out of every week they were champion of.  A week they held alone becomes a
    week without a champion (``NOBODY``), not an uncrowned week: otherwise the week before
    would count as the latest crowned one and its champions would get the role back."""
    mine = (WeeklyChampion.guild_id == guild_id, WeeklyChampion.user_id == user_id)
    others = aliased(WeeklyChampion)
    shared = exists().where(
        others.guild_id == WeeklyChampion.guild_id,
        others.period == WeeklyChampion.period,
        others.user_id != user_id,
    )
    await session.execute(update(WeeklyChampion).where(*mine, ~shared).values(user_id=NOBODY))
    await session.execute(delete(WeeklyChampion).where(*mine))


async def _retarget_audit(
    session: AsyncSession, guild_id: int, user_id: int, member_id: int
) -> None:
    """Audit rows about the user name their anonymised row instead: the moderators' record of
    what they did stays, without a key back to the person.  A bare id is how
    ``/admin token-revoke`` named its target before ``user:``."""
    await session.execute(
        update(AuditEntry)
        .where(
            AuditEntry.guild_id == guild_id,
            AuditEntry.target.in_([audit.user_target(user_id), str(user_id)]),
        )
        .values(target=audit.member_target(member_id))
    )


async def delete_member_data(
    session: AsyncSession, *, guild_id: int, user_id: int, now: datetime
) -> Deletion:
    """Delete the user's submissions and code, anonymise their member row (see the rules)."""
    member_id = await find_member_id(session, guild_id, user_id)
    if member_id is None:
        return Deletion(found=False, submissions=0, grading_jobs=0, ledger_rows_anonymised=0)
    await lock_member(session, guild_id, member_id)
    jobs = await session.scalar(
        select(func.count())
        .select_from(GradingJob)
        .join(Submission, Submission.id == GradingJob.submission_id)
        .where(Submission.member_id == member_id)
    )
    ledger_rows = await session.scalar(
        select(func.count()).select_from(XpEntry).where(XpEntry.member_id == member_id)
    )
    await session.execute(delete(SpeedRecord).where(SpeedRecord.member_id == member_id))
    await session.execute(  # through the submissions: fingerprints are indexed by submission
        delete(SolutionFingerprint).where(
            SolutionFingerprint.submission_id.in_(
                select(Submission.id).where(Submission.member_id == member_id)
            )
        )
    )
    await session.execute(
        delete(NearCopy).where(
            (NearCopy.member_id == member_id) | (NearCopy.earlier_member_id == member_id)
        )
    )
    await forget_sharing(session, member_id)
    removed = await session.execute(delete(Submission).where(Submission.member_id == member_id))
    await _uncrown(session, guild_id, user_id)
    await set_listed(session, guild_id=guild_id, member_id=member_id, listed=False)
    await session.execute(
        update(Member)
        .where(Member.id == member_id)
        .values(user_id=-Member.id, display_name="", hidden=True, anonymised_at=now)
    )
    await queue_users(session, guild_id, [user_id], now=now)
    # their API token names them (guild and user): it goes, and stops working at once
    await session.execute(
        delete(ApiToken).where(ApiToken.guild_id == guild_id, ApiToken.user_id == user_id)
    )
    await _retarget_audit(session, guild_id, user_id, member_id)
    deletion = Deletion(
        found=True,
        submissions=removed.rowcount,  # type: ignore[attr-defined]
        grading_jobs=jobs or 0,
        ledger_rows_anonymised=ledger_rows or 0,
    )
    audit.add(
        session,
        guild_id=guild_id,
        actor_user_id=ANONYMOUS_ACTOR,
        action=DELETE_ACTION,
        target="member data",
        details={
            "submissions": deletion.submissions,
            "grading_jobs": deletion.grading_jobs,
            "ledger_rows_anonymised": deletion.ledger_rows_anonymised,
        },
    )
    return deletion
