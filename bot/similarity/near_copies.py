"""Near-copies kept for moderators: each passing submission's fingerprints, and the pairs at or
above the threshold.

Rules:

- When a ``passed`` verdict settles (``bot.delivery.outcomes.settle``), in its transaction,
  ``record_fingerprints`` records the submission's fingerprints (``bot.similarity.fingerprints``
  of its code, the task's interface signatures left out) and flags every other member's
  fingerprinted submission of the same task in the same server whose Jaccard index with it is
  at least ``THRESHOLD``.  Only passing submissions are fingerprinted, so only passing ones
  pair.  A submission settled again (a regrade: the same bytes) records what it already has;
  nothing but ``/privacy delete`` removes fingerprints or pairs (nothing expires).  A member's
  own submissions never pair; a solution under ``MIN_TOKENS`` normalized tokens has no
  fingerprints and never pairs.
- The earlier one of a pair is the one submitted first (the lower id), whichever settled
  first; a pair is recorded once (``near_copies`` is unique on it), with the score when found.
- Candidates come from the (server, task, hash) index, by prefix filtering (``_near``): a
  pair at the threshold shares at least ``need = ceil(THRESHOLD * n)`` of this one's ``n``
  fingerprints (|A ∪ B| >= |A|), so it holds most of the smallest few; only the submissions
  that do are counted and scored.  No table is scanned.
- Nothing here is shown to members and nothing changes XP: ``/admin similar`` lists the pairs
  (``near_copies``), newest first.  ``/privacy delete`` removes the member's fingerprints and
  every pair naming them (``bot.progress.privacy``).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from bot.db.dialect import upsert
from bot.db.models import Member, NearCopy, SolutionFingerprint, Submission
from bot.similarity.fingerprints import THRESHOLD, fingerprints, solution_source

#: pairs listed by ``near_copies``; the rest are counted
SHOWN = 15
#: values bound in one IN list (SQLite and asyncpg take at most 32,766)
_CHUNK = 1_000


async def record_fingerprints(
    session: AsyncSession,
    submission: Submission,
    *,
    interface: Collection[str],
    passed: bool,
    now: datetime,
) -> int:
    """Record the submission's fingerprints (none unless it ``passed``) and flag its
    near-copies (see the rules); how many pairs were newly flagged."""
    if not passed:
        return 0
    source = solution_source(submission.content, submission.file_kind)
    prints = fingerprints(source, interface) if source is not None else frozenset()
    if not prints:
        return 0
    known = await session.scalar(
        select(func.count()).where(SolutionFingerprint.submission_id == submission.id)
    )
    if not known:  # settled again (a regrade of the same bytes): already recorded
        await session.execute(
            insert(SolutionFingerprint.__table__),  # Core: no ORM bookkeeping per row
            [
                {
                    "guild_id": submission.guild_id,
                    "member_id": submission.member_id,
                    "submission_id": submission.id,
                    "task_ref": submission.task_ref,
                    "hash": value,
                }
                for value in prints
            ],
        )
    flagged = 0
    for other, other_member, score in await _near(session, submission, prints):
        earlier, later = sorted([(other, other_member), (submission.id, submission.member_id)])
        result = await session.execute(
            upsert(session, NearCopy)
            .values(
                guild_id=submission.guild_id,
                task_ref=submission.task_ref,
                submission_id=later[0],
                member_id=later[1],
                earlier_submission_id=earlier[0],
                earlier_member_id=earlier[1],
                score=score,
                created_at=now,
            )
            .on_conflict_do_nothing(
                index_elements=[NearCopy.submission_id, NearCopy.earlier_submission_id]
            )
        )
        flagged += result.rowcount or 0  # type: ignore[attr-defined]
    return flagged


async def _near(
    session: AsyncSession, submission: Submission, prints: frozenset[int]
) -> list[tuple[int, int, float]]:
    """(submission id, member id, score) of each other member's fingerprinted submission of the
    task at or above the threshold.

    Prefix filtering: a submission reaching the threshold shares at least ``need`` of this
    one's ``n`` fingerprints, so it lacks at most ``slack = n - need`` of any of them: of the
    ``2 * slack + 1`` smallest, looked up in the (server, task, hash) index, it holds at least
    ``slack + 1``.  Only the submissions that do are candidates, and only their own rows (the
    (submission, hash) index) are counted."""
    need = math.ceil(THRESHOLD * len(prints))
    slack = len(prints) - need  # of this one's fingerprints a near-copy may lack
    prefix = sorted(prints)[: 2 * slack + 1]
    shared: dict[tuple[int, int], int] = {}
    for start in range(0, len(prefix), _CHUNK):
        rows = await session.execute(
            select(SolutionFingerprint.submission_id, SolutionFingerprint.member_id, func.count())
            .where(
                SolutionFingerprint.guild_id == submission.guild_id,
                SolutionFingerprint.task_ref == submission.task_ref,
                SolutionFingerprint.hash.in_(prefix[start : start + _CHUNK]),
                SolutionFingerprint.member_id != submission.member_id,
            )
            .group_by(SolutionFingerprint.submission_id, SolutionFingerprint.member_id)
        )
        for other, member, count in rows:
            shared[other, member] = shared.get((other, member), 0) + count
    # lacking at most ``slack`` of the prefix, a near-copy holds the other ``slack + 1`` of it
    candidates = {
        other: member for (other, member), count in shared.items() if count >= len(prefix) - slack
    }
    if not candidates:
        return []
    mine = select(SolutionFingerprint.hash).where(
        SolutionFingerprint.submission_id == submission.id
    )
    found = []
    ids = sorted(candidates)
    for start in range(0, len(ids), _CHUNK):
        rows = await session.execute(
            select(
                SolutionFingerprint.submission_id,
                func.count(),
                func.sum(case((SolutionFingerprint.hash.in_(mine), 1), else_=0)),
            )
            .where(SolutionFingerprint.submission_id.in_(ids[start : start + _CHUNK]))
            .group_by(SolutionFingerprint.submission_id)
        )
        for other, size, common in rows:
            score = common / (len(prints) + size - common)
            if score >= THRESHOLD:
                found.append((other, candidates[other], score))
    return found


@dataclass(frozen=True)
class NearCopyPair:
    submission_id: int
    member_name: str
    user_id: int
    submitted_at: datetime
    earlier_submission_id: int
    earlier_member_name: str
    earlier_user_id: int
    earlier_submitted_at: datetime
    score: float
    flagged_at: datetime


@dataclass(frozen=True)
class NearCopies:
    task_ref: str
    pairs: tuple[NearCopyPair, ...]  # newest first, at most ``SHOWN``
    more: int  # pairs not shown


async def near_copies(
    session: AsyncSession, *, guild_id: int, task_ref: str, limit: int = SHOWN
) -> NearCopies:
    """The task's flagged pairs in the server, newest first: the first ``limit`` and a count
    of the rest."""
    later, earlier = aliased(Submission), aliased(Submission)
    who, whom = aliased(Member), aliased(Member)
    where = (NearCopy.guild_id == guild_id, NearCopy.task_ref == task_ref)
    total = await session.scalar(select(func.count()).select_from(NearCopy).where(*where)) or 0
    rows = await session.execute(
        select(
            NearCopy,
            who.display_name,
            who.user_id,
            later.created_at,
            whom.display_name,
            whom.user_id,
            earlier.created_at,
        )
        .join(later, later.id == NearCopy.submission_id)
        .join(earlier, earlier.id == NearCopy.earlier_submission_id)
        .join(who, who.id == NearCopy.member_id)
        .join(whom, whom.id == NearCopy.earlier_member_id)
        .where(*where)
        .order_by(NearCopy.created_at.desc(), NearCopy.id.desc())
        .limit(limit)
    )
    pairs = tuple(
        NearCopyPair(
            submission_id=flag.submission_id,
            member_name=name,
            user_id=user_id,
            submitted_at=submitted,
            earlier_submission_id=flag.earlier_submission_id,
            earlier_member_name=earlier_name,
            earlier_user_id=earlier_user,
            earlier_submitted_at=earlier_submitted,
            score=flag.score,
            flagged_at=flag.created_at,
        )
        for flag, name, user_id, submitted, earlier_name, earlier_user, earlier_submitted in rows
    )
    return NearCopies(task_ref, pairs, total - len(pairs))
