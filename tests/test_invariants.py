"""``bot.invariants``: clean after normal activity, and each broken invariant reported with the
numbers that show it.  The activity is the real award, grant and queue code; the corruption is
done by hand, the way a bad migration or a stray SQL session would."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db import migrate, presence
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import MemberXp
from bot.db.types import utcnow
from bot.invariants import verify
from bot.jobs import heartbeat, queue
from bot.jobs.capabilities import Capabilities
from bot.progress.awards import award_self_report, award_verdict
from bot.progress.grants import grant
from bot.progress.ledger import append
from bot.progress.privacy import hide
from tests.support import GUILD_ID, add_member, queue_submission

UTC = ZoneInfo("UTC")
BUILD = "go-brrrr/matmul-three-ways"
QUIZ = "go-brrrr/predict-the-shapes"
LEASE_S = 2.0


async def _activity(engine: AsyncEngine) -> None:
    """Two members earn XP the ways members do: a build over two days (a streak bonus), a quiz
    passed better the second time, a /done, a moderator's grant and a clamped revoke."""
    sessions = make_sessionmaker(engine)
    yesterday = utcnow() - timedelta(days=1)
    async with sessions() as session, session.begin():
        for member_id in (1, 2):
            await add_member(session, member_id)
    for member_id in (1, 2):
        async with sessions() as session, session.begin():
            await award_self_report(
                session,
                guild_id=GUILD_ID,
                member_id=member_id,
                task_ref="go-brrrr/zero-to-hero",
                task_xp=20,
                tz=UTC,
                now=yesterday,
            )
        for score, source, task, xp in ((1.0, "task", BUILD, 60), (0.5, "quiz", QUIZ, 30)):
            for again in (score, score, 1.0):  # a repeat pays nothing, a better one the rest
                async with sessions() as session, session.begin():
                    await award_verdict(
                        session,
                        guild_id=GUILD_ID,
                        member_id=member_id,
                        task_ref=task,
                        task_xp=xp,
                        status="passed",
                        score=again,
                        submission_id=None,
                        tz=UTC,
                        now=utcnow(),
                        source=source,  # type: ignore[arg-type]
                    )
    for request_id, amount in ((1, 15), (2, -10_000)):
        async with sessions() as session, session.begin():
            await grant(
                session,
                guild_id=GUILD_ID,
                member_id=2,
                amount=amount,
                reason="test",
                actor_user_id=99,
                request_id=request_id,
                tz=UTC,
                now=utcnow(),
            )


async def test_a_fresh_database_is_consistent(engine: AsyncEngine) -> None:
    assert await verify(engine, lease_s=LEASE_S) == []


async def test_normal_activity_is_consistent(engine: AsyncEngine) -> None:
    await _activity(engine)
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        await queue_submission(session, member_id=1)
    await heartbeat.beat(sessions, "live:1:aa", Capabilities())
    assert await queue.claim(sessions, "live:1:aa", lease_s=LEASE_S) is not None
    async with sessions() as session:
        rows = (await session.execute(text("SELECT COUNT(*) FROM xp_ledger"))).scalar_one()
    assert rows >= 10  # the activity really happened
    # the lease ran out a moment ago but its worker beats: it renews or finishes soon
    assert await verify(engine, lease_s=LEASE_S, now=utcnow() + timedelta(seconds=5)) == []


async def test_a_hand_corrupted_total_is_reported_with_both_numbers(engine: AsyncEngine) -> None:
    await _activity(engine)
    async with make_sessionmaker(engine)() as session, session.begin():
        await session.execute(
            update(MemberXp)
            .where(MemberXp.member_id == 1, MemberXp.period_kind == "all")
            .values(xp=MemberXp.xp + 7)
        )
    problems = [str(p) for p in await verify(engine, lease_s=LEASE_S)]
    total = 20 + 60 + 30 + 5  # zero-to-hero, the build, the quiz, day 2's streak bonus
    assert problems == [
        f"totals: member 1 (user 10 in guild {GUILD_ID}): all-time total is {total + 7} XP but "
        f"the ledger sums to {total} XP",
        f"buckets: guild {GUILD_ID}: the all-time board counts 1 member(s) at {total} XP "
        "but 0 have that total",
        f"buckets: guild {GUILD_ID}: the all-time board counts 0 member(s) at {total + 7} XP "
        "but 1 have that total",
    ]


async def test_a_missing_total_row_is_reported(engine: AsyncEngine) -> None:
    await _activity(engine)
    async with make_sessionmaker(engine)() as session, session.begin():
        await session.execute(
            text("DELETE FROM member_xp WHERE member_id = 1 AND period_kind = 'week'")
        )
    problems = [str(p) for p in await verify(engine, lease_s=LEASE_S)]
    totals = [p for p in problems if p.startswith("totals: ")]
    assert totals, f"a week's total vanished unnoticed: {problems}"
    for problem in totals:
        assert problem.startswith("totals: member 1 (user 10 in guild 1): week "), problem
        assert " total is 0 XP but the ledger sums to " in problem, problem


async def test_a_task_paid_twice_is_reported(engine: AsyncEngine) -> None:
    """A later, worse verdict paid in full (as if what the task had paid were not subtracted)."""
    await _activity(engine)
    async with make_sessionmaker(engine)() as session, session.begin():
        await append(
            session,
            guild_id=GUILD_ID,
            member_id=1,
            amount=30,
            source="task",
            reason="paid again",
            reference=BUILD,
            key=f"task:1:{BUILD}:30",
            tz=UTC,
            now=utcnow(),
        )
    problems = [str(p) for p in await verify(engine, lease_s=LEASE_S)]
    assert problems == [
        f"paid twice: member 1 (user 10 in guild {GUILD_ID}): {BUILD} paid 90 XP in all but "
        "its best award is 60 XP (paid twice)"
    ]


async def test_a_job_leased_by_a_vanished_worker_is_reported(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        await add_member(session)
        _, dead_job = await queue_submission(session)
        _, live_job = await queue_submission(session)
    assert await queue.claim(sessions, "gone:7:bb", lease_s=LEASE_S) is not None
    await heartbeat.beat(sessions, "live:8:cc", Capabilities())
    assert await queue.claim(sessions, "live:8:cc", lease_s=LEASE_S) is not None
    assert await verify(engine, lease_s=LEASE_S) == []  # both leases still run
    later = utcnow() + timedelta(seconds=5)
    problems = [str(p) for p in await verify(engine, lease_s=LEASE_S, now=later)]
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"leases: job {dead_job} (submission ")
    assert "leased by worker gone:7:bb, never seen (no heartbeat)" in problems[0]
    # much later the live worker has not beaten either: its job is stuck too
    much_later = utcnow() + timedelta(seconds=presence.RECENT_S + 5)
    problems = [str(p) for p in await verify(engine, lease_s=LEASE_S, now=much_later)]
    assert [p.split(" (")[0] for p in problems] == [
        f"leases: job {dead_job}",
        f"leases: job {live_job}",
    ]
    assert "live:8:cc, last seen " in problems[1]


async def test_a_schema_behind_head_is_reported(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    try:
        problems = [str(p) for p in await verify(engine, lease_s=LEASE_S)]
        assert problems == [
            f"schema: the database is at no schema, not {migrate.head_revision()}; "
            "run brrrbot db upgrade"
        ]
        await migrate.upgrade(engine, "0004")
        assert [str(p) for p in await verify(engine, lease_s=LEASE_S)] == [
            f"schema: the database is at 0004, not {migrate.head_revision()}; "
            "run brrrbot db upgrade"
        ]
    finally:
        await engine.dispose()


async def test_a_hidden_member_left_on_the_boards_is_reported(engine: AsyncEngine) -> None:
    await _activity(engine)
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        await hide(session, guild_id=GUILD_ID, user_id=10, display_name="learner")
    assert await verify(engine, lease_s=LEASE_S) == []  # hiding keeps every invariant
    async with sessions() as session, session.begin():
        await session.execute(
            update(MemberXp)
            .where(MemberXp.member_id == 1, MemberXp.period_kind == "all")
            .values(listed=True)
        )
    problems = [str(p) for p in await verify(engine, lease_s=LEASE_S)]
    assert (
        f"buckets: guild {GUILD_ID}: member 1's all all total is listed on the boards against "
        "their privacy choice, or the other way round"
    ) in problems
