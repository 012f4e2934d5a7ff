"""A small server to run progress tests against: members, awards and ledger reads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.db.models import MemberXp, MemberXpCount, XpEntry
from bot.progress.awards import Award, VerdictStatus, award_self_report, award_verdict
from bot.progress.grants import Grant, grant
from bot.progress.members import ensure_member
from bot.progress.periods import local_date, month_key, week_key

GUILD_ID = 111
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
UTC_ZONE = ZoneInfo("UTC")

TotalsRow = tuple[int, str, str, int, datetime]


class World:
    """One guild in a migrated database; every helper runs in its own committed transaction."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], tz: ZoneInfo = BERLIN) -> None:
        self.sessions = sessions
        self.tz = tz
        self._request = 0

    async def member(self, user_id: int, name: str | None = None) -> int:
        async with self.sessions() as session, session.begin():
            member = await ensure_member(session, GUILD_ID, user_id, name or f"user{user_id}")
        return member.id

    async def verdict(
        self,
        member_id: int,
        now: datetime,
        *,
        task: str = "q1/build",
        xp: int = 100,
        status: VerdictStatus = "passed",
        score: float = 1.0,
        submission_id: int | None = 1,
    ) -> Award:
        async with self.sessions() as session, session.begin():
            return await award_verdict(
                session,
                guild_id=GUILD_ID,
                member_id=member_id,
                task_ref=task,
                task_xp=xp,
                status=status,
                score=score,
                submission_id=submission_id,
                tz=self.tz,
                now=now,
            )

    async def done(self, member_id: int, now: datetime, task: str, xp: int = 20) -> Award:
        async with self.sessions() as session, session.begin():
            return await award_self_report(
                session,
                guild_id=GUILD_ID,
                member_id=member_id,
                task_ref=task,
                task_xp=xp,
                tz=self.tz,
                now=now,
            )

    async def grant(
        self, member_id: int, amount: int, now: datetime, request_id: int | None = None
    ) -> Grant:
        if request_id is None:
            self._request += 1
            request_id = self._request
        async with self.sessions() as session, session.begin():
            return await grant(
                session,
                guild_id=GUILD_ID,
                member_id=member_id,
                amount=amount,
                reason="helping in #help",
                actor_user_id=999,
                request_id=request_id,
                tz=self.tz,
                now=now,
            )

    async def ledger(self, member_id: int | None = None) -> list[XpEntry]:
        query = select(XpEntry).order_by(XpEntry.id)
        if member_id is not None:
            query = query.where(XpEntry.member_id == member_id)
        async with self.sessions() as session:
            return list((await session.execute(query)).scalars())

    async def buckets(self) -> set[tuple[str, str, int, int]]:
        query = select(
            MemberXpCount.period_kind,
            MemberXpCount.period_key,
            MemberXpCount.xp,
            MemberXpCount.members,
        )
        async with self.sessions() as session:
            return {tuple(row) for row in await session.execute(query)}

    async def totals(self) -> set[TotalsRow]:
        query = select(
            MemberXp.member_id,
            MemberXp.period_kind,
            MemberXp.period_key,
            MemberXp.xp,
            MemberXp.reached_at,
        )
        async with self.sessions() as session:
            return {tuple(row) for row in await session.execute(query)}


def totals_from_ledger(entries: Iterable[XpEntry], tz: ZoneInfo) -> set[TotalsRow]:
    """The totals the ledger implies, computed independently of bot.progress.totals."""
    sums: dict[tuple[int, str, str], list[Any]] = {}
    for entry in entries:
        day = local_date(entry.created_at, tz)
        for kind, key in (("all", "all"), ("week", week_key(day)), ("month", month_key(day))):
            total = sums.setdefault((entry.member_id, kind, key), [0, entry.created_at])
            total[0] += entry.amount
            total[1] = max(total[1], entry.created_at)
    return {(*key, xp, reached) for key, (xp, reached) in sums.items()}


def buckets_from_totals(totals: Iterable[TotalsRow]) -> set[tuple[str, str, int, int]]:
    """How many members each board has at each XP value above 0."""
    counts = Counter((kind, key, xp) for _, kind, key, xp, _ in totals if xp > 0)
    return {(*bucket, members) for bucket, members in counts.items()}
