"""The derived totals always equal the ledger, incrementally and after a rebuild."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select

from bot.db.models import Member, XpEntry
from bot.progress.ledger import append
from bot.progress.totals import rebuild_totals
from tests.progress.world import (
    BERLIN,
    GUILD_ID,
    NEW_YORK,
    World,
    buckets_from_totals,
    totals_from_ledger,
)


async def busy_history(world: World) -> list[int]:
    """Members over weeks and months, a Monday just after local midnight, and moderator rows
    written last but dated earlier (so the ledger is not in time order)."""
    members = [await world.member(user_id) for user_id in (1, 2, 3)]
    start = datetime(2026, 10, 26, 0, 30, tzinfo=BERLIN)  # Monday 00:30, Sunday 23:30 UTC
    for day in range(0, 40, 3):
        for n, member in enumerate(members):
            when = start + timedelta(days=day, hours=5 * n)
            await world.verdict(member, when, task=f"q{day}/build", xp=10 + 5 * n, score=1.0)
    await world.grant(members[0], -1000, start + timedelta(days=20))  # clamped
    await world.grant(members[1], 35, start + timedelta(days=21))
    await world.done(members[2], start + timedelta(days=22), "q99/read")
    return members


async def test_totals_equal_the_ledger(world: World) -> None:
    members = await busy_history(world)
    totals = await world.totals()
    assert totals == totals_from_ledger(await world.ledger(), BERLIN)
    assert await world.buckets() == buckets_from_totals(totals)
    all_time = {member: xp for member, kind, _, xp, _ in totals if kind == "all"}
    async with world.sessions() as session:
        for member in members:
            ledger_sum = select(func.sum(XpEntry.amount)).where(XpEntry.member_id == member)
            assert all_time[member] == (await session.execute(ledger_sum)).scalar_one()
    assert all_time[members[0]] == 0  # the revoke took everything, and no more


async def test_rebuild_equals_incremental(world: World) -> None:
    await busy_history(world)
    incremental = await world.totals(), await world.buckets()
    async with world.sessions() as session, session.begin():
        written = await rebuild_totals(session, guild_id=GUILD_ID, tz=BERLIN)
    assert written == len(incremental[0])
    assert (await world.totals(), await world.buckets()) == incremental


async def test_rebuild_after_a_time_zone_change_moves_weeks(world: World) -> None:
    first, *_ = await busy_history(world)
    berlin = await world.totals()
    async with world.sessions() as session, session.begin():
        await rebuild_totals(session, guild_id=GUILD_ID, tz=NEW_YORK)
    new_york = await world.totals()
    assert new_york == totals_from_ledger(await world.ledger(), NEW_YORK)
    assert await world.buckets() == buckets_from_totals(new_york)
    assert new_york != berlin
    # Monday 00:30 Berlin is still Sunday in New York: the first award moves back a week.
    assert (first, "week", "2026-W43") not in {row[:3] for row in berlin}
    assert (first, "week", "2026-W43", 10) in {row[:4] for row in new_york}


async def test_rebuild_touches_only_its_guild(world: World) -> None:
    await world.member(1)
    async with world.sessions() as session, session.begin():
        other = Member(guild_id=GUILD_ID, user_id=5, display_name="x")
        session.add(other)
    before = await world.totals()
    await world.verdict(other.id, datetime(2026, 11, 2, 12, 0, tzinfo=BERLIN))
    async with world.sessions() as session, session.begin():
        await rebuild_totals(session, guild_id=GUILD_ID + 1, tz=NEW_YORK)
    assert await world.totals() > before


async def test_a_duplicate_key_is_not_counted_twice(world: World) -> None:
    ada = await world.member(1)
    now = datetime(2026, 11, 2, 12, 0, tzinfo=BERLIN)
    async with world.sessions() as session, session.begin():
        for _ in range(2):
            await append(
                session,
                guild_id=GUILD_ID,
                member_id=ada,
                amount=5,
                source="admin",
                reason="same request",
                reference="1",
                key="admin:1",
                tz=BERLIN,
                now=now,
            )
    assert {(kind, xp) for _, kind, _, xp, _ in await world.totals()} == {
        ("all", 5),
        ("week", 5),
        ("month", 5),
    }


async def test_out_of_order_rows_keep_the_newest_reached_at(world: World) -> None:
    ada = await world.member(1)
    late = datetime(2026, 11, 3, 12, 0, tzinfo=BERLIN)
    await world.verdict(ada, late, task="q1/a")
    await world.verdict(ada, late - timedelta(hours=1), task="q1/b")
    assert {reached for *_, reached in await world.totals()} == {late}


async def test_buckets_follow_each_members_total(world: World) -> None:
    ada, bob = await world.member(1), await world.member(2)
    now = datetime(2026, 11, 2, 12, 0, tzinfo=BERLIN)
    await world.verdict(ada, now, task="q1/a", xp=30)
    await world.verdict(bob, now, task="q1/a", xp=30)
    assert ("all", "all", 30, 2) in await world.buckets()
    await world.verdict(ada, now, task="q1/b", xp=20)
    await world.grant(bob, -30, now)  # down to 0: off the board
    await world.grant(bob, -5, now)  # a 0 XP change moves nothing
    buckets = {b for b in await world.buckets() if b[0] == "all"}
    assert buckets == {("all", "all", 50, 1)}
    assert await world.buckets() == buckets_from_totals(await world.totals())
