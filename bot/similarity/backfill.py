"""Fingerprints for the passes settled before near-copy checks existed (migration 0013), so that
``/admin similar`` compares them too: ``brrrbot db backfill-fingerprints``.

Rules:

- A passing submission without fingerprints is fingerprinted as its settlement would have done
  (``record_fingerprints``, which also flags its near-copies), oldest first, each in its own
  transaction: a run that stops half way keeps what it did, and a second run takes the rest.
- The interface signatures to leave out come from the submission's own grading job (the spec
  the bot built when it accepted the upload), so the command needs nothing but the database;
  a pass whose job carries no readable spec (queued before revision 0005) is counted and left.
- A pass under ``MIN_TOKENS`` normalized tokens has no fingerprints, as at settlement; it is
  counted as short, and looked at again by the next run (cheap: it never pairs).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from enum import Enum, auto

from sqlalchemy import exists, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import aliased

from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import GradingJob, SolutionFingerprint, Submission
from bot.db.states import SubmissionStatus
from bot.db.types import utcnow
from bot.errors import UserError
from bot.jobs.job_spec import UnreadableSpec, read_spec
from bot.similarity.near_copies import record_fingerprints

#: submissions read per query
BATCH = 200


class Found(Enum):
    """What became of one pass."""

    FINGERPRINTED = auto()
    SHORT = auto()  # under the minimum length: none to record
    NO_SPEC = auto()  # its job carries no spec to read the interface from
    GONE = auto()  # deleted since it was read


@dataclass(frozen=True)
class Backfilled:
    """What one run did."""

    fingerprinted: int = 0  # passes that now have fingerprints
    short: int = 0  # under the minimum length: none to record
    no_spec: int = 0  # their job carries no spec to read the interface from
    flagged: int = 0  # near-copy pairs newly flagged

    @property
    def examined(self) -> int:
        return self.fingerprinted + self.short + self.no_spec


async def backfill_database(url: str) -> Backfilled:
    """``backfill`` on the database at ``url`` (the CLI's entry); it must be at the newest
    schema."""
    engine = make_engine(url)
    try:
        revision, head = await migrate.current(engine), migrate.head_revision()
        if revision != head:
            raise UserError(
                f"the database is {f'at {revision}' if revision else 'empty'}, not at {head}: "
                "run brrrbot db upgrade first"
            )
        return await backfill(make_sessionmaker(engine), now=utcnow())
    finally:
        await engine.dispose()


async def backfill(sessions: async_sessionmaker[AsyncSession], *, now: datetime) -> Backfilled:
    """Fingerprint every passing submission that has none (see the rules)."""
    found: Counter[Found] = Counter()
    flagged = 0
    after = 0
    while batch := await _unprinted(sessions, after):
        for submission_id, spec in batch:
            outcome, pairs = await _one(sessions, submission_id, spec, now)
            found[outcome] += 1
            flagged += pairs
        after = batch[-1][0]
    return Backfilled(found[Found.FINGERPRINTED], found[Found.SHORT], found[Found.NO_SPEC], flagged)


async def _unprinted(
    sessions: async_sessionmaker[AsyncSession], after: int
) -> list[tuple[int, object]]:
    """The next passes without fingerprints, by id, each with its newest job's stored spec."""
    job = aliased(GradingJob)
    newest_job = (
        select(func.max(job.id))
        .where(job.submission_id == Submission.id)
        .correlate(Submission)
        .scalar_subquery()
    )
    async with sessions() as session:
        rows = await session.execute(
            select(Submission.id, GradingJob.spec)
            .outerjoin(GradingJob, GradingJob.id == newest_job)
            .where(
                Submission.id > after,
                Submission.status == SubmissionStatus.PASSED,
                ~exists().where(SolutionFingerprint.submission_id == Submission.id),
            )
            .order_by(Submission.id)
            .limit(BATCH)
        )
        return [(row[0], row[1]) for row in rows]


async def _one(
    sessions: async_sessionmaker[AsyncSession], submission_id: int, stored: object, now: datetime
) -> tuple[Found, int]:
    """Fingerprint one pass; what became of it, and how many pairs it flagged."""
    spec = read_spec(stored if isinstance(stored, dict) else None)
    if isinstance(spec, UnreadableSpec):
        return Found.NO_SPEC, 0
    async with sessions() as session, session.begin():
        submission = await session.get(Submission, submission_id)
        if submission is None:
            return Found.GONE, 0
        flagged = await record_fingerprints(
            session, submission, interface=spec.interface, passed=True, now=now
        )
        printed = await session.scalar(
            select(exists().where(SolutionFingerprint.submission_id == submission_id))
        )
    return (Found.FINGERPRINTED, flagged) if printed else (Found.SHORT, 0)
