"""A moderator strikes a speed result from every board (``/admin speed-void``) or puts it back.

Rules:

- A void marks one speed result (``speed_results``, keyed by its submission): ``voided_at``,
  the moderator's ``void_reason`` and ``voided_by``.  A voided result is on no board, in no
  "fastest of the week", on no web page and not among the tasks with results
  (``bot.progress.speed_results`` filters every public read by ``counts``); the member's next
  best unvoided result ranks in its place.  The member's own export still lists it, with the
  void and its reason.
- The void lives on the result's row, and ``record_speed``'s upsert rewrites only the trial's
  columns: a regrade's new trial for the same submission stays voided.  A member's deletion
  takes the row, void included.
- A void never touches XP (a moderator who means to also runs ``/admin xp``), and posts
  already sent stay as they were: only what is drawn afterwards leaves it out.
- Each void and restore writes an audit row (``speed.void``, ``speed.restore``) in its own
  transaction, naming the member as ``audit.user_target`` (so a deletion rewrites it) and
  holding the submission, task and reason, never the user id.
- The member is told once per void, with the reason: the void is recorded with its notice due
  (``void_notified_at`` NULL); ``claim_notice`` stamps it in a transaction of its own before
  the message is sent, so two callers never both send it, and ``release_notice`` hands it back
  when the message could not be sent.  A restore clears the void and its notice.
- What a moderator may not do is a typed ``VoidRefused``: an unknown submission, another
  server's, one with no speed result (never speed-ranked, or never passed), voiding a void
  result, restoring one that is not void.  The cog says each in one sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot import audit
from bot.db.models import Member, SpeedRecord, Submission
from bot.progress.ledger import REASON_CHARS

#: results the autocomplete offers: Discord shows at most 25 choices
RECENT = 25


@dataclass(frozen=True)
class VoidRefusal:
    submission_id: int


@dataclass(frozen=True)
class NoSuchSubmission(VoidRefusal):
    """No submission has this id."""


@dataclass(frozen=True)
class OtherServer(VoidRefusal):
    """The submission belongs to another server."""


@dataclass(frozen=True)
class NotSpeedRanked(VoidRefusal):
    """The submission has no speed result: its task is not speed-ranked, or it never passed."""


@dataclass(frozen=True)
class AlreadyVoid(VoidRefusal):
    reason: str


@dataclass(frozen=True)
class NotVoid(VoidRefusal):
    """Restoring a result that is not void."""


class VoidRefused(Exception):
    """A void or restore that was refused; ``refusal`` says which and why."""

    def __init__(self, refusal: VoidRefusal) -> None:
        super().__init__(refusal)
        self.refusal = refusal


@dataclass(frozen=True)
class VoidChange:
    """What a void or restore changed: whose result of which task."""

    submission_id: int
    task_ref: str
    user_id: int
    display_name: str
    device: str
    board_ratio: float


@dataclass(frozen=True)
class VoidNotice:
    """A void the member is to be told of."""

    submission_id: int
    guild_id: int
    user_id: int
    task_ref: str
    reason: str


@dataclass(frozen=True)
class RecentResult:
    """One speed result, as the moderators' autocomplete offers it."""

    submission_id: int
    display_name: str
    task_ref: str
    board_ratio: float
    device: str
    recorded_at: datetime
    voided: bool


async def _result(
    session: AsyncSession, guild_id: int, submission_id: int
) -> tuple[SpeedRecord, Member]:
    """The submission's speed result (locked for the change) and its member, or why not."""
    submission = await session.get(Submission, submission_id)
    if submission is None:
        raise VoidRefused(NoSuchSubmission(submission_id))
    if submission.guild_id != guild_id:
        raise VoidRefused(OtherServer(submission_id))
    found = (
        await session.execute(
            select(SpeedRecord, Member)
            .join(Member, Member.id == SpeedRecord.member_id)
            .where(SpeedRecord.submission_id == submission_id)
            .with_for_update(of=SpeedRecord)
        )
    ).first()
    if found is None:
        raise VoidRefused(NotSpeedRanked(submission_id))
    record, member = found
    return record, member


def _change(row: SpeedRecord, member: Member) -> VoidChange:
    return VoidChange(
        row.submission_id,
        row.task_ref,
        member.user_id,
        member.display_name,
        row.device,
        row.board_ratio,
    )


async def void(
    session: AsyncSession,
    *,
    guild_id: int,
    submission_id: int,
    reason: str,
    actor_user_id: int,
    now: datetime,
) -> VoidChange:
    """Strike the submission's speed result from every board, audited, its notice due."""
    reason = reason.strip()
    if not reason or len(reason) > REASON_CHARS:
        raise ValueError(f"the reason must be 1 to {REASON_CHARS} characters")
    row, member = await _result(session, guild_id, submission_id)
    if row.voided_at is not None:
        raise VoidRefused(AlreadyVoid(submission_id, row.void_reason or ""))
    return _set_void(
        session,
        row,
        member,
        guild_id=guild_id,
        actor_user_id=actor_user_id,
        action="speed.void",
        voided=(now, reason, actor_user_id),
        reason=reason,
    )


async def restore(
    session: AsyncSession,
    *,
    guild_id: int,
    submission_id: int,
    actor_user_id: int,
    now: datetime,
) -> VoidChange:
    """Put a voided result back on the boards exactly as it was, audited."""
    row, member = await _result(session, guild_id, submission_id)
    if row.voided_at is None:
        raise VoidRefused(NotVoid(submission_id))
    return _set_void(
        session,
        row,
        member,
        guild_id=guild_id,
        actor_user_id=actor_user_id,
        action="speed.restore",
        voided=None,
        voided_for=row.void_reason or "",
        restored_at=now.isoformat(),
    )


def _set_void(
    session: AsyncSession,
    row: SpeedRecord,
    member: Member,
    *,
    guild_id: int,
    actor_user_id: int,
    action: str,
    voided: tuple[datetime, str, int] | None,
    **details: object,
) -> VoidChange:
    """Set ``voided`` (when, why, by whom) on the result, or clear it (None), and audit it.

    Void and restore share this so that both reset the notice (a void's is due, a restore's
    is moot) and both audit the same facts; ``details`` are what each adds to the audit row.
    """
    row.voided_at, row.void_reason, row.voided_by = voided or (None, None, None)
    row.void_notified_at = None
    change = _change(row, member)
    audit.add(
        session,
        guild_id=guild_id,
        actor_user_id=actor_user_id,
        action=action,
        target=audit.user_target(member.user_id),
        details=_details(change, **details),
    )
    return change


def _details(change: VoidChange, **extra: object) -> dict[str, object]:
    return {
        "submission_id": change.submission_id,
        "task_ref": change.task_ref,
        "device": change.device,
        "board_ratio": change.board_ratio,
        **extra,
    }


async def claim_notice(
    session: AsyncSession, *, submission_id: int, now: datetime
) -> VoidNotice | None:
    """The void's notice, stamped as sent; None when it is not due (told already, restored)."""
    claimed = await session.execute(
        update(SpeedRecord)
        .where(
            SpeedRecord.submission_id == submission_id,
            SpeedRecord.voided_at.is_not(None),
            SpeedRecord.void_notified_at.is_(None),
        )
        .values(void_notified_at=now)
        .execution_options(synchronize_session=False)
    )
    if not claimed.rowcount:  # type: ignore[attr-defined]
        return None
    row = (
        await session.execute(
            select(
                SpeedRecord.guild_id, Member.user_id, SpeedRecord.task_ref, SpeedRecord.void_reason
            )
            .join(Member, Member.id == SpeedRecord.member_id)
            .where(SpeedRecord.submission_id == submission_id)
        )
    ).one()
    guild_id, user_id, task_ref, reason = row
    return VoidNotice(submission_id, guild_id, user_id, task_ref, reason or "")


async def release_notice(session: AsyncSession, *, submission_id: int) -> None:
    """Hand a claimed notice back (its message could not be sent): it is due again."""
    await session.execute(
        update(SpeedRecord)
        .where(SpeedRecord.submission_id == submission_id, SpeedRecord.voided_at.is_not(None))
        .values(void_notified_at=None)
        .execution_options(synchronize_session=False)
    )


async def recent_results(
    session: AsyncSession, guild_id: int, *, voided: bool, limit: int = RECENT
) -> tuple[RecentResult, ...]:
    """The server's latest speed results (void ones, or not), newest first, for the
    moderators' autocomplete; hidden members' too (a void is about the result, not the
    board)."""
    flag = SpeedRecord.voided_at.is_not(None) if voided else SpeedRecord.voided_at.is_(None)
    query = (
        select(
            SpeedRecord.submission_id,
            Member.display_name,
            SpeedRecord.task_ref,
            SpeedRecord.board_ratio,
            SpeedRecord.device,
            SpeedRecord.created_at,
            SpeedRecord.voided_at.is_not(None),
        )
        .join(Member, Member.id == SpeedRecord.member_id)
        .where(SpeedRecord.guild_id == guild_id, Member.anonymised_at.is_(None), flag)
        .order_by(SpeedRecord.created_at.desc(), SpeedRecord.id.desc())
        .limit(limit)
    )
    return tuple(RecentResult(*row) for row in await session.execute(query))
