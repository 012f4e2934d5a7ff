"""Moderator grants and revokes: audited, idempotent, never below zero."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import AuditEntry
from bot.progress.grants import Grant, grant
from tests.progress.world import BERLIN, GUILD_ID, World

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


async def audit(sessions: async_sessionmaker[AsyncSession]) -> list[AuditEntry]:
    async with sessions() as session:
        return list((await session.execute(select(AuditEntry).order_by(AuditEntry.id))).scalars())


async def test_grant_writes_ledger_and_audit(world: World) -> None:
    ada = await world.member(1)
    result = await world.grant(ada, 60, NOW, request_id=5001)
    assert (result.applied, result.new_total, result.leveled_up, result.repeated) == (
        60,
        60,
        True,
        False,
    )
    [entry] = await world.ledger(ada)
    assert (entry.source, entry.amount, entry.idempotency_key) == ("admin", 60, "admin:5001")
    [row] = await audit(world.sessions)
    assert (row.action, row.actor_user_id, row.target) == ("xp.grant", 999, "user:1")
    assert row.details == {
        "member_id": ada,
        "requested": 60,
        "applied": 60,
        "reason": "helping in #help",
        "request_id": 5001,
    }


async def test_revoke_is_clamped_at_zero(world: World) -> None:
    ada = await world.member(1)
    await world.verdict(ada, NOW, xp=50)
    revoke = await world.grant(ada, -80, NOW)
    assert (revoke.requested, revoke.applied, revoke.new_total) == (-80, -50, 0)
    assert (revoke.old_level, revoke.new_level, revoke.leveled_up) == (2, 1, False)
    nothing_left = await world.grant(ada, -10, NOW)
    assert (nothing_left.applied, nothing_left.new_total) == (0, 0)
    assert sum(e.amount for e in await world.ledger(ada)) == 0
    actions = [(r.action, r.details["applied"]) for r in await audit(world.sessions)]
    assert actions == [("xp.revoke", -50), ("xp.revoke", 0)]


async def test_partial_revoke(world: World) -> None:
    ada = await world.member(1)
    await world.verdict(ada, NOW, xp=100)
    assert (await world.grant(ada, -30, NOW)).new_total == 70


async def test_repeated_request_changes_nothing(world: World) -> None:
    ada = await world.member(1)
    await world.verdict(ada, NOW, xp=50)
    first = await world.grant(ada, -80, NOW, request_id=42)
    await world.verdict(ada, NOW, task="q2/build", xp=30)
    retry = await world.grant(ada, -80, NOW, request_id=42)
    assert (retry.repeated, retry.applied, retry.new_total) == (True, first.applied, 30)
    assert not retry.leveled_up
    assert len(await audit(world.sessions)) == 1
    assert [e.source for e in await world.ledger(ada)] == ["task", "admin", "task"]


async def test_rolled_back_grant_leaves_neither_row(world: World) -> None:
    ada = await world.member(1)
    async with world.sessions() as session:
        await grant(
            session,
            guild_id=GUILD_ID,
            member_id=ada,
            amount=10,
            reason="oops",
            actor_user_id=999,
            request_id=1,
            tz=BERLIN,
            now=NOW,
        )
        await session.rollback()
    assert await world.ledger() == [] and await audit(world.sessions) == []


@pytest.mark.parametrize(
    ("amount", "reason", "error"),
    [(0, "why", "grant of 0"), (10, " ", "reason"), (10, "x" * 201, "reason")],
)
async def test_invalid_grants_are_refused(
    world: World, amount: int, reason: str, error: str
) -> None:
    ada = await world.member(1)
    async with world.sessions() as session:
        with pytest.raises(ValueError, match=error):
            await grant(
                session,
                guild_id=GUILD_ID,
                member_id=ada,
                amount=amount,
                reason=reason,
                actor_user_id=999,
                request_id=1,
                tz=BERLIN,
                now=NOW,
            )


async def test_concurrent_retries_of_one_request_apply_once(
    world: World, database_url: str
) -> None:
    ada = await world.member(1)
    engines = [make_engine(database_url) for _ in range(2)]

    async def run(sessions: async_sessionmaker[AsyncSession]) -> Grant:
        async with sessions() as session, session.begin():
            return await grant(
                session,
                guild_id=GUILD_ID,
                member_id=ada,
                amount=25,
                reason="retry",
                actor_user_id=999,
                request_id=77,
                tz=BERLIN,
                now=NOW,
            )

    try:
        results = await asyncio.gather(*(run(make_sessionmaker(e)) for e in engines))
    finally:
        for engine in engines:
            await engine.dispose()
    assert sorted(r.repeated for r in results) == [False, True]
    assert [e.amount for e in await world.ledger(ada)] == [25]
    assert len(await audit(world.sessions)) == 1
