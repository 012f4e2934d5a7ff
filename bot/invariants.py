"""``brrrbot db verify``: check the invariants the rest of the system leans on.

Each check reads only; a problem is one line naming what is wrong and the numbers involved.

- **schema**: the database is at this code's head revision (the other checks assume it).
- **totals**: every stored total (``member_xp``, all time and each local week and month in the
  server's time zone) equals the sum of its member's ledger rows, and every leaderboard bucket
  (``member_xp_counts``) counts the members that total holds.
- **paid twice**: a task pays once.  Every completion row (sources task, quiz, self) is keyed
  ``task:MEMBER:QUEST/TASK:TOTAL`` with the task's cumulative XP after it, and each award pays
  only up to that total, so a task's rows always sum to the largest total among their keys.
  A larger sum is XP paid twice (the same verdict paid under two keys, a second ``/done``);
  a smaller one is a payment lost.  This needs no quest content, which may have changed.
- **leases**: no job is left ``running`` under an expired lease whose worker is gone (no
  heartbeat within the longer of its lease and ``presence.RECENT_S``): such a job waits for
  a worker that will never finish it.  A job whose worker died a moment ago is not reported;
  its lease runs out and another worker takes it over.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from sqlalchemy import select, true
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import (
    GradingJob,
    Guild,
    Member,
    MemberXp,
    MemberXpCount,
    WorkerHeartbeat,
    XpEntry,
)
from bot.db.presence import RECENT_S
from bot.db.states import JobStatus
from bot.db.types import utcnow
from bot.progress.ledger import COMPLETION_SOURCES
from bot.progress.periods import month_key, week_key
from bot.progress.totals import ALL_TIME_KEY

Check = Literal["schema", "totals", "buckets", "paid twice", "leases"]
TotalKey = tuple[int, str, str]  # member, period kind, period key


@dataclass(frozen=True)
class Problem:
    check: Check
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"


async def verify_database(url: str, lease_s: float) -> list[Problem]:
    """``verify`` on the database at ``url`` (the CLI's entry)."""
    engine = make_engine(url)
    try:
        return await verify(engine, lease_s=lease_s)
    finally:
        await engine.dispose()


async def verify(
    engine: AsyncEngine, *, lease_s: float, now: datetime | None = None
) -> list[Problem]:
    """Every problem found, in check order; empty when the database is consistent."""
    revision = await migrate.current(engine)
    head = migrate.head_revision()
    if revision != head:
        found = revision or "no schema"
        return [
            Problem("schema", f"the database is at {found}, not {head}; run brrrbot db upgrade")
        ]
    now = now or utcnow()
    async with make_sessionmaker(engine, read_only=True)() as session:
        return [
            *await check_totals(session),
            *await check_buckets(session),
            *await check_listed(session),
            *await check_paid_once(session),
            *await check_leases(session, lease_s=lease_s, now=now),
        ]


async def check_totals(session: AsyncSession) -> list[Problem]:
    """Stored totals against the ledger, per member and period (a missing total is 0)."""
    names = await _member_names(session)
    problems = []
    for guild_id, timezone in (await session.execute(select(Guild.id, Guild.timezone))).all():
        expected = await _ledger_sums(session, guild_id, ZoneInfo(timezone))
        stored: dict[TotalKey, int] = {
            (member_id, kind, key): xp
            for member_id, kind, key, xp in await session.execute(
                select(
                    MemberXp.member_id, MemberXp.period_kind, MemberXp.period_key, MemberXp.xp
                ).where(MemberXp.guild_id == guild_id)
            )
        }
        for member_id, kind, key in sorted(expected.keys() | stored.keys()):
            want = expected.get((member_id, kind, key), 0)
            have = stored.get((member_id, kind, key), 0)
            if want != have:
                period = "all-time" if kind == "all" else f"{kind} {key}"
                problems.append(
                    Problem(
                        "totals",
                        f"{names.get(member_id, f'member {member_id}')}: {period} total is "
                        f"{have} XP but the ledger sums to {want} XP",
                    )
                )
    return problems


async def _ledger_sums(session: AsyncSession, guild_id: int, tz: ZoneInfo) -> dict[TotalKey, int]:
    """What ``bot.progress.totals`` must hold for a server: its ledger summed per period."""
    sums: Counter[TotalKey] = Counter()
    periods: dict[date, tuple[str, str]] = {}
    rows = await session.stream(
        select(XpEntry.member_id, XpEntry.amount, XpEntry.created_at)
        .where(XpEntry.guild_id == guild_id)
        .execution_options(yield_per=10_000)
    )
    async for member_id, amount, created_at in rows:
        day = created_at.astimezone(tz).date()
        week, month = periods.get(day) or periods.setdefault(day, (week_key(day), month_key(day)))
        sums[(member_id, "all", ALL_TIME_KEY)] += amount
        sums[(member_id, "week", week)] += amount
        sums[(member_id, "month", month)] += amount
    return dict(sums)


async def check_buckets(session: AsyncSession) -> list[Problem]:
    """``member_xp_counts`` against the totals it counts (listed members above 0 XP only)."""
    expected = Counter(
        tuple(row)
        for row in await session.execute(
            select(MemberXp.guild_id, MemberXp.period_kind, MemberXp.period_key, MemberXp.xp).where(
                MemberXp.xp > 0, MemberXp.listed == true()
            )
        )
    )
    stored = {
        (guild_id, kind, key, xp): members
        for guild_id, kind, key, xp, members in await session.execute(
            select(
                MemberXpCount.guild_id,
                MemberXpCount.period_kind,
                MemberXpCount.period_key,
                MemberXpCount.xp,
                MemberXpCount.members,
            )
        )
    }
    problems = []
    for bucket in sorted(expected.keys() | stored.keys()):
        guild_id, kind, key, xp = bucket
        want, have = expected.get(bucket, 0), stored.get(bucket, 0)
        if want != have:
            board = "all-time" if kind == "all" else f"{kind} {key}"
            problems.append(
                Problem(
                    "buckets",
                    f"guild {guild_id}: the {board} board counts {have} member(s) at {xp} XP "
                    f"but {want} have that total",
                )
            )
    return problems


async def check_listed(session: AsyncSession) -> list[Problem]:
    """Totals on the boards exactly when their member is neither hidden nor anonymised."""
    should_list = ~Member.hidden & Member.anonymised_at.is_(None)
    query = (
        select(Member.guild_id, Member.id, MemberXp.period_kind, MemberXp.period_key)
        .join(MemberXp, MemberXp.member_id == Member.id)
        .where(MemberXp.listed != should_list)
        .order_by(Member.id)
    )
    return [
        Problem(
            "buckets",
            f"guild {guild_id}: member {member_id}'s {kind} {key} total is "
            "listed on the boards against their privacy choice, or the other way round",
        )
        for guild_id, member_id, kind, key in await session.execute(query)
    ]


async def check_paid_once(session: AsyncSession) -> list[Problem]:
    """Each task's completion rows sum to the largest cumulative total their keys record."""
    names = await _member_names(session)
    paid: Counter[tuple[int, str]] = Counter()
    best: dict[tuple[int, str], int] = {}
    problems = []
    rows = await session.execute(
        select(
            XpEntry.id,
            XpEntry.member_id,
            XpEntry.reference,
            XpEntry.amount,
            XpEntry.idempotency_key,
        )
        .where(XpEntry.source.in_(COMPLETION_SOURCES))
        .order_by(XpEntry.id)
    )
    for row_id, member_id, reference, amount, key in rows:
        task = (member_id, reference or "")
        total = _keyed_total(key, member_id, reference)
        who = names.get(member_id, f"member {member_id}")
        if total is None:
            problems.append(
                Problem(
                    "paid twice",
                    f"{who}: ledger row {row_id} for {reference} has the key "
                    f"{key!r}, not task:{member_id}:{reference}:TOTAL",
                )
            )
            continue
        paid[task] += amount
        best[task] = max(best.get(task, 0), total)
    for (member_id, reference), total in sorted(best.items()):
        sum_ = paid[(member_id, reference)]
        if sum_ != total:
            what = "paid twice" if sum_ > total else "a payment is missing"
            problems.append(
                Problem(
                    "paid twice",
                    f"{names.get(member_id, f'member {member_id}')}: {reference} paid {sum_} XP "
                    f"in all but its best award is {total} XP ({what})",
                )
            )
    return problems


def _keyed_total(key: str, member_id: int, reference: str | None) -> int | None:
    """The cumulative total in ``task:MEMBER:REF:TOTAL``, or None for any other key."""
    prefix = f"task:{member_id}:{reference}:"
    if not key.startswith(prefix):
        return None
    total = key.removeprefix(prefix)
    return int(total) if total.isdigit() else None


async def check_leases(session: AsyncSession, *, lease_s: float, now: datetime) -> list[Problem]:
    """Running jobs under an expired lease whose worker has not been seen for longer than
    the lease (or the heartbeat window, whichever is longer)."""
    window = timedelta(seconds=max(lease_s, RECENT_S))
    rows = await session.execute(
        select(
            GradingJob.id,
            GradingJob.submission_id,
            GradingJob.lease_owner,
            GradingJob.lease_expires_at,
            WorkerHeartbeat.last_seen_at,
        )
        .outerjoin(WorkerHeartbeat, WorkerHeartbeat.name == GradingJob.lease_owner)
        .where(GradingJob.status == JobStatus.RUNNING, GradingJob.lease_expires_at < now)
        .order_by(GradingJob.id)
    )
    problems = []
    for job_id, submission_id, owner, expired_at, last_seen in rows:
        if last_seen is not None and last_seen >= now - window:
            continue
        seen = (
            "never seen (no heartbeat)"
            if last_seen is None
            else f"last seen {(now - last_seen).total_seconds():.0f} s ago"
        )
        problems.append(
            Problem(
                "leases",
                f"job {job_id} (submission {submission_id}) is leased by worker {owner}, {seen}; "
                f"its lease ran out {(now - expired_at).total_seconds():.0f} s ago and no worker "
                "has taken it over",
            )
        )
    return problems


async def _member_names(session: AsyncSession) -> dict[int, str]:
    """How a problem names a member: its id, Discord user and server."""
    return {
        member_id: f"member {member_id} (user {user_id} in guild {guild_id})"
        for member_id, user_id, guild_id in await session.execute(
            select(Member.id, Member.user_id, Member.guild_id)
        )
    }
