"""After a verdict: pay its XP once, then deliver it to its member once.

Both steps are recorded on the submission (``settled_at`` with the award, ``delivered_at``
with the route used), so a bot killed at any point picks up where it stopped: settling again
pays nothing twice (the ledger's idempotency keys), and the stored award makes a re-sent
message say the same thing.

A stored verdict is read (``Verdict.from_json``) once per delivery: the pass that settles it
hands the typed verdict on to its delivery; only one settled in an earlier pass is read from
the row again.  Each verdict is handled on its own: one that cannot be read, paid, rendered or
sent is recorded with a backoff (``bot.delivery.failures``; settling and sending share one
count of tries) and the pass moves on, so it never holds back the verdicts behind it.  Only
``passed`` pays XP; an ``error`` verdict (grading failed on our side) is delivered as a message
saying it is not the member's fault.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from sqlalchemy import ColumnElement, Row, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot import clock
from bot.db.models import Guild, Member, Submission
from bot.db.states import FINISHED
from bot.delivery.failures import RETRIES, RetryPolicy, record_failure
from bot.delivery.transport import PendingVerdict, Route, RouteRefused, Transport
from bot.logs import log_context
from bot.metrics import METRICS
from bot.progress.awards import NO_AWARD, Award, award_verdict
from bot.progress.speed_results import record_speed
from bot.similarity.near_copies import record_fingerprints
from graders.base import Verdict

log = logging.getLogger(__name__)

#: don't start an edit with less token life than this left
TOKEN_MARGIN = timedelta(seconds=30)
#: a send that hangs longer than this is a failed try, so it cannot stall the others
SEND_TIMEOUT_S = 30.0
BATCH = 20
MAX_ROUNDS = 10  # batches per pass; the next pass takes the rest


class Store(Protocol):
    """What delivery needs of ``bot.services.Services``."""

    sessions: async_sessionmaker[AsyncSession]
    reads: async_sessionmaker[AsyncSession]

    async def task_xp(self, guild_id: int, task_ref: str) -> int | None: ...

    async def task_interface(self, guild_id: int, task_ref: str) -> tuple[str, ...] | None: ...


class Undeliverable(Exception):
    """No route took the verdict: the try failed and is retried later."""


@dataclass(frozen=True)
class PassResult:
    """What one ``deliver_pending`` pass did."""

    settled: int = 0
    delivered: int = 0
    failed: int = 0  # tries that failed (retried later, or given up on)
    more: bool = False  # it stopped after MAX_ROUNDS full batches: more are due now


async def deliver_pending(
    store: Store,
    transport: Transport,
    *,
    now: Callable[[], datetime] = clock.now,
    policy: RetryPolicy = RETRIES,
) -> PassResult:
    """Settle, then deliver, every verdict that is due, oldest first; a verdict that fails is
    recorded for a later try and never stops the others.  Raises only when the database
    itself fails (the caller retries the whole pass)."""
    settled = delivered = failed = 0
    for _ in range(MAX_ROUNDS):
        due = await _due_for_settling(store.reads, now())
        read: dict[int, Verdict] = {}  # what this round settled, for its delivery
        for submission_id, guild_id, task_ref in due:
            with log_context(submission_id=submission_id, guild_id=guild_id):
                try:
                    xp = await store.task_xp(guild_id, task_ref)
                    interface = await store.task_interface(guild_id, task_ref)
                    async with store.sessions() as session, session.begin():
                        verdict = await settle(
                            session, submission_id, xp, now(), interface=interface
                        )
                    if verdict is not None:
                        settled += 1
                        read[submission_id] = verdict
                except Exception as exc:
                    failed += 1
                    METRICS.delivery_failed("settle")
                    await record_failure(
                        store.sessions, submission_id, "settle", exc, now(), policy
                    )
        rows = await _due_for_delivery(store.reads, now())
        for row in rows:
            with log_context(submission_id=row.id, guild_id=row.guild_id):
                try:
                    pending = _pending(row, read.get(row.id))
                    async with asyncio.timeout(SEND_TIMEOUT_S):
                        route = await _send(transport, pending, now())
                    async with store.sessions() as session, session.begin():
                        await mark_delivered(session, pending.submission_id, route, now())
                    delivered += 1
                    METRICS.verdict_delivered(pending.verdict.status, row.created_at, now())
                except Exception as exc:
                    failed += 1
                    METRICS.delivery_failed("deliver")
                    await record_failure(store.sessions, row.id, "deliver", exc, now(), policy)
        if len(due) < BATCH and len(rows) < BATCH:
            break
    else:
        return PassResult(settled, delivered, failed, more=True)
    return PassResult(settled, delivered, failed)


def _due(now: datetime) -> tuple[ColumnElement[bool], ...]:
    """Not given up on, and not waiting for a retry."""
    return (
        Submission.delivery_failed_at.is_(None),
        or_(Submission.next_delivery_at.is_(None), Submission.next_delivery_at <= now),
    )


async def _due_for_settling(
    reads: async_sessionmaker[AsyncSession], now: datetime
) -> list[tuple[int, int, str]]:
    async with reads() as session:
        rows = await session.execute(
            select(Submission.id, Submission.guild_id, Submission.task_ref)
            .where(Submission.status.in_(FINISHED), Submission.settled_at.is_(None), *_due(now))
            .order_by(Submission.finished_at, Submission.id)
            .limit(BATCH)
        )
        return [(sid, guild_id, task_ref) for sid, guild_id, task_ref in rows]


async def settle(
    session: AsyncSession,
    submission_id: int,
    task_xp: int | None,
    now: datetime,
    *,
    interface: Collection[str] | None = None,
) -> Verdict | None:
    """Pay a finished verdict's XP (``task_xp`` None: the task is gone, no XP), record its speed
    result if it passed with one, record its code's fingerprints and near-copies
    (``bot.similarity.near_copies``; ``interface``: the build task's functions, None when it is
    no build task on the map: nothing is fingerprinted), and record the award on the
    submission; the verdict settled, or None when another process settled it first.  Raises
    ``BadVerdict`` when the stored verdict cannot be read."""
    row = (
        await session.execute(
            select(Submission, Guild.timezone)
            .join(Guild, Guild.id == Submission.guild_id)
            .where(Submission.id == submission_id, Submission.settled_at.is_(None))
        )
    ).first()
    if row is None:
        return None
    submission, tz_name = row
    verdict = Verdict.from_json(submission.verdict or {})
    award = NO_AWARD
    if task_xp and verdict.status == "passed":
        award = await award_verdict(
            session,
            guild_id=submission.guild_id,
            member_id=submission.member_id,
            task_ref=submission.task_ref,
            task_xp=task_xp,
            status="passed",
            score=verdict.score,
            submission_id=submission.id,
            tz=ZoneInfo(tz_name),
            now=now,
        )
    if verdict.status == "passed" and verdict.speed is not None:
        await record_speed(
            session,
            guild_id=submission.guild_id,
            member_id=submission.member_id,
            submission_id=submission.id,
            task_ref=submission.task_ref,
            speed=verdict.speed,
            submitted_at=submission.created_at,
            now=now,
        )
    if interface is not None:
        await record_fingerprints(
            session, submission, interface=interface, passed=verdict.status == "passed", now=now
        )
    await session.execute(
        update(Submission)
        .where(Submission.id == submission.id, Submission.settled_at.is_(None))
        .values(settled_at=now, award=award.to_json())
    )
    return verdict


async def _due_for_delivery(
    reads: async_sessionmaker[AsyncSession], now: datetime
) -> list[Row[Any]]:
    """Settled, undelivered verdicts that are due, as raw rows: each is read into a
    ``PendingVerdict`` on its own, so one that cannot be read fails alone."""
    async with reads() as session:
        rows = await session.execute(
            select(
                Submission.id,
                Submission.guild_id,
                Member.user_id,
                Submission.task_ref,
                Submission.verdict,
                Submission.award,
                Submission.reply_token,
                Submission.reply_expires_at,
                Submission.reply_channel_id,
                Guild.quest_channel_id,
                Submission.created_at,
            )
            .join(Member, Member.id == Submission.member_id)
            .join(Guild, Guild.id == Submission.guild_id)
            .where(Submission.settled_at.is_not(None), Submission.delivered_at.is_(None))
            .where(*_due(now))
            .order_by(Submission.settled_at, Submission.id)
            .limit(BATCH)
        )
        return list(rows)


def _pending(row: Row[Any], verdict: Verdict | None) -> PendingVerdict:
    """The row as a delivery, with ``verdict`` when settling just read it (else it is read from
    the row); raises ``BadVerdict`` (or pydantic's error for the award) when the stored JSON is
    not one."""
    return PendingVerdict(
        submission_id=row.id,
        guild_id=row.guild_id,
        user_id=row.user_id,
        task_ref=row.task_ref,
        verdict=verdict if verdict is not None else Verdict.from_json(row.verdict or {}),
        award=Award.from_json(row.award or {}),
        reply_token=row.reply_token,
        reply_expires_at=row.reply_expires_at,
        reply_channel_id=row.reply_channel_id,
        quest_channel_id=row.quest_channel_id,
    )


async def _send(transport: Transport, pending: PendingVerdict, now: datetime) -> Route:
    """The reply edit while its token lives, else a DM, else a notice in a channel."""
    expires = pending.reply_expires_at
    if pending.reply_token and expires and expires - now > TOKEN_MARGIN:
        try:
            await transport.edit_reply(pending)
            return "edit"
        except RouteRefused as exc:
            log.info("submission %d: edit refused (%s)", pending.submission_id, exc)
    try:
        await transport.send_dm(pending)
        return "dm"
    except RouteRefused as exc:
        log.info("submission %d: DM refused (%s)", pending.submission_id, exc)
    channels = dict.fromkeys(c for c in (pending.quest_channel_id, pending.reply_channel_id) if c)
    for channel_id in channels:
        try:
            await transport.post_notice(pending, channel_id)
            return "channel"
        except RouteRefused as exc:
            log.warning("submission %d: channel post refused (%s)", pending.submission_id, exc)
    raise Undeliverable("no route took it: reply token expired, DMs closed, no channel post")


async def mark_delivered(
    session: AsyncSession, submission_id: int, via: Route, now: datetime
) -> None:
    await session.execute(
        update(Submission)
        .where(Submission.id == submission_id, Submission.delivered_at.is_(None))
        .values(delivered_at=now, delivered_via=via, next_delivery_at=None)
    )
