"""Task XP from verdicts and /done: once per member and task, better scores pay the difference."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.db.engine import make_engine, make_sessionmaker
from bot.progress.awards import Award, award_verdict, verdict_xp
from bot.progress.ledger import append
from bot.progress.totals import total_xp
from tests.progress.world import BERLIN, GUILD_ID, World

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def test_verdict_worth() -> None:
    assert verdict_xp(100, "passed", 1.0) == 100
    assert verdict_xp(30, "passed", 0.5) == 15
    assert verdict_xp(25, "passed", 0.5) == 12  # Python's round: halves go to even
    assert verdict_xp(100, "failed", 0.9) == 0
    assert verdict_xp(100, "error", 1.0) == 0
    with pytest.raises(ValueError, match="outside"):
        verdict_xp(100, "passed", 1.5)
    with pytest.raises(ValueError, match="positive"):
        verdict_xp(0, "passed", 1.0)


async def test_only_passing_verdicts_pay(world: World) -> None:
    ada = await world.member(1)
    failed = await world.verdict(ada, NOW, status="failed", score=0.8)
    errored = await world.verdict(ada, NOW, status="error", score=0.0)
    assert failed.xp_added == errored.xp_added == failed.new_total == 0
    assert await world.ledger(ada) == []
    passed = await world.verdict(ada, NOW)
    assert (passed.xp_added, passed.new_total) == (100, 100)


async def test_better_scores_pay_the_difference_once(world: World) -> None:
    ada = await world.member(1)
    quiz = {"task": "q1/quiz", "xp": 40}
    assert (await world.verdict(ada, NOW, score=0.5, **quiz)).xp_added == 20
    assert (await world.verdict(ada, NOW, score=0.5, **quiz)).xp_added == 0  # equal
    assert (await world.verdict(ada, NOW, score=0.75, **quiz)).xp_added == 10  # better
    assert (await world.verdict(ada, NOW, score=0.5, **quiz)).xp_added == 0  # worse
    last = await world.verdict(ada, NOW, score=1.0, **quiz)
    assert (last.xp_added, last.new_total) == (10, 40)
    entries = await world.ledger(ada)
    assert [e.amount for e in entries] == [20, 10, 10]
    assert [e.idempotency_key for e in entries] == [
        f"task:{ada}:q1/quiz:20",
        f"task:{ada}:q1/quiz:30",
        f"task:{ada}:q1/quiz:40",
    ]
    assert {e.source for e in entries} == {"task"} and {e.reference for e in entries} == {"q1/quiz"}


async def test_regrades_follow_the_better_verdict(world: World) -> None:
    ada = await world.member(1)
    await world.verdict(ada, NOW, score=1.0, submission_id=7)
    regraded = await world.verdict(ada, NOW, score=0.5, submission_id=7)  # a harsher grader
    again = await world.verdict(ada, NOW, score=1.0, submission_id=7)  # the same verdict again
    assert regraded.xp_added == again.xp_added == 0
    assert sum(e.amount for e in await world.ledger(ada)) == 100


async def test_tasks_pay_separately_per_member_and_task(world: World) -> None:
    ada, bob = await world.member(1), await world.member(2)
    await world.verdict(ada, NOW, task="q1/build")
    await world.verdict(ada, NOW, task="q1/other", xp=50)
    await world.verdict(bob, NOW, task="q1/build")
    assert sum(e.amount for e in await world.ledger(ada)) == 150
    assert sum(e.amount for e in await world.ledger(bob)) == 100


async def test_self_reports_pay_once(world: World) -> None:
    ada = await world.member(1)
    first = await world.done(ada, NOW, "q1/read", xp=20)
    second = await world.done(ada, NOW, "q1/read", xp=20)
    assert (first.xp_added, second.xp_added, second.new_total) == (20, 0, 20)
    [entry] = await world.ledger(ada)
    assert (entry.source, entry.reference) == ("self", "q1/read")


async def test_award_reports_level_ups(world: World) -> None:
    ada = await world.member(1)
    small = await world.verdict(ada, NOW, task="q1/a", xp=30)
    big = await world.verdict(ada, NOW, task="q1/b", xp=130)
    assert not small.leveled_up
    assert (big.old_level, big.new_level, big.leveled_up, big.new_total) == (1, 3, True, 160)


async def test_award_belongs_to_the_callers_transaction(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    ada = await world.member(1)
    async with sessions() as session:
        award = await award_verdict(
            session,
            guild_id=GUILD_ID,
            member_id=ada,
            task_ref="q1/build",
            task_xp=100,
            status="passed",
            score=1.0,
            submission_id=1,
            tz=BERLIN,
            now=NOW,
        )
        assert award.xp_added == 100
        await session.rollback()
    assert await world.ledger() == [] and await world.totals() == set()


async def test_a_member_of_another_guild_is_refused(world: World) -> None:
    ada = await world.member(1)
    async with world.sessions() as session:
        with pytest.raises(LookupError, match="not in guild"):
            await award_verdict(
                session,
                guild_id=GUILD_ID + 1,
                member_id=ada,
                task_ref="q1/build",
                task_xp=100,
                status="passed",
                score=1.0,
                submission_id=1,
                tz=BERLIN,
                now=NOW,
            )


async def test_concurrent_duplicate_verdicts_award_once(world: World, database_url: str) -> None:
    ada = await world.member(1)
    engines = [make_engine(database_url) for _ in range(2)]

    async def award(sessions: async_sessionmaker[AsyncSession]) -> Award:
        async with sessions() as session, session.begin():
            return await award_verdict(
                session,
                guild_id=GUILD_ID,
                member_id=ada,
                task_ref="q1/build",
                task_xp=100,
                status="passed",
                score=1.0,
                submission_id=1,
                tz=BERLIN,
                now=NOW,
            )

    try:
        results = await asyncio.gather(*(award(make_sessionmaker(e)) for e in engines))
    finally:
        for engine in engines:
            await engine.dispose()
    assert sorted(r.xp_added for r in results) == [0, 100]
    assert [e.amount for e in await world.ledger(ada)] == [100]


async def test_a_raced_award_with_a_stale_total_collapses_on_its_key(world: World) -> None:
    """What a second process that read the total before the first committed would write."""
    ada = await world.member(1)
    await world.verdict(ada, NOW)
    async with world.sessions() as session, session.begin():
        inserted = await append(
            session,
            guild_id=GUILD_ID,
            member_id=ada,
            amount=100,
            source="task",
            reason="raced",
            reference="q1/build",
            key=f"task:{ada}:q1/build:100",
            tz=BERLIN,
            now=NOW,
        )
        assert not inserted
        assert await total_xp(session, ada) == 100
    assert [e.amount for e in await world.ledger(ada)] == [100]
