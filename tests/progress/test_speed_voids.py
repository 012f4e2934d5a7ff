"""A moderator's void of a speed result: off every board, surviving a regrade, never XP."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.models import AuditEntry, Guild, SpeedRecord, Submission, XpEntry
from bot.progress import privacy
from bot.progress.members import ensure_member
from bot.progress.public import member_page
from bot.progress.speed_results import (
    fastest_of_week,
    record_speed,
    speed_board,
    speed_task_refs,
)
from bot.progress.speed_voids import (
    AlreadyVoid,
    NoSuchSubmission,
    NotSpeedRanked,
    NotVoid,
    OtherServer,
    VoidChange,
    VoidRefused,
    claim_notice,
    recent_results,
    release_notice,
    restore,
    void,
)
from graders.base import SPEED_INSTRUMENT
from tests.progress.test_speed_results import (
    CPU,
    GPU,
    NOW,
    TASK,
    WEEK,
    settled,
    submission,
    trial,
)
from tests.progress.world import GUILD_ID, World

MOD = 777
INSIDE = WEEK.start + timedelta(hours=30)


async def result(
    world: World,
    member_id: int,
    ratio: float,
    *,
    when: datetime = INSIDE,
    device: str = GPU,
    task: str = TASK,
    instrument: int = SPEED_INSTRUMENT,
) -> int:
    """A speed result recorded at ``when``; its submission id."""
    submission_id = await submission(world, member_id)
    async with world.sessions() as session, session.begin():
        await record_speed(
            session,
            guild_id=GUILD_ID,
            member_id=member_id,
            submission_id=submission_id,
            task_ref=task,
            speed=trial(ratio, device, instrument=instrument),
            submitted_at=when,
            now=when,
        )
    return submission_id


async def do_void(
    world: World, submission_id: int, reason: str = "copied a library kernel"
) -> VoidChange:
    async with world.sessions() as session, session.begin():
        return await void(
            session,
            guild_id=GUILD_ID,
            submission_id=submission_id,
            reason=reason,
            actor_user_id=MOD,
            now=NOW,
        )


async def do_restore(world: World, submission_id: int, guild_id: int = GUILD_ID) -> VoidChange:
    async with world.sessions() as session, session.begin():
        return await restore(
            session, guild_id=guild_id, submission_id=submission_id, actor_user_id=MOD, now=NOW
        )


async def ledger_rows(session: AsyncSession) -> list[tuple[object, ...]]:
    """Every column of every XP ledger row."""
    table = XpEntry.__table__
    return [tuple(row) for row in await session.execute(select(table).order_by(table.c.id))]


async def board_of(world: World, task: str = TASK) -> list[tuple[str, int, int, float]]:
    async with world.sessions() as session:
        board = await speed_board(session, guild_id=GUILD_ID, task_ref=task)
    return [(d.device, e.rank, e.member_id, e.ratio) for d in board.devices for e in d.entries]


async def test_a_void_makes_the_next_best_rank_and_a_restore_puts_it_back_exactly(
    world: World,
) -> None:
    ada, bob = await world.member(1), await world.member(2)
    best = await result(world, ada, 5.0)
    await result(world, ada, 2.0, when=INSIDE + timedelta(hours=1))
    await result(world, bob, 3.0)
    before = await board_of(world)
    assert before == [(GPU, 1, ada, 5.0), (GPU, 2, bob, 3.0)]

    change = await do_void(world, best)
    assert (change.submission_id, change.task_ref, change.user_id) == (best, TASK, 1)
    # ada's next-best unvoided result ranks, not nothing
    assert await board_of(world) == [(GPU, 1, bob, 3.0), (GPU, 2, ada, 2.0)]

    await do_restore(world, best)
    assert await board_of(world) == before
    async with world.sessions() as session:
        board = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
        row = await session.scalar(select(SpeedRecord).where(SpeedRecord.submission_id == best))
    assert board.devices[0].entries[0].achieved_at == INSIDE
    assert row is not None and (row.voided_at, row.void_reason, row.voided_by) == (None,) * 3


async def test_voiding_all_of_a_members_results_removes_them(world: World) -> None:
    ada, bob, cyd = await world.member(1), await world.member(2), await world.member(3)
    first = await result(world, ada, 5.0)
    second = await result(world, ada, 2.0, device=CPU)
    # cyd: a retired result, and a result of today's instrument that is voided below
    await result(world, cyd, 7.0, instrument=SPEED_INSTRUMENT - 1)
    struck = await result(world, cyd, 6.0)
    await result(world, bob, 3.0)
    only = await result(world, bob, 9.0, task="other/task")
    for submission_id in (first, second, only, struck):
        await do_void(world, submission_id)
    assert await board_of(world) == [(GPU, 1, bob, 3.0)]
    async with world.sessions() as session:
        board = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
        other = await speed_board(session, guild_id=GUILD_ID, task_ref="other/task")
        refs = await speed_task_refs(session, GUILD_ID)
    assert board.retired == 1  # cyd, whose only unvoided result is retired; ada is not counted
    assert other.empty and other.retired == 0
    assert refs == (TASK,)  # a task whose only results are void has no board to offer


async def test_the_fastest_of_the_week_skips_a_void(world: World) -> None:
    ada, bob = await world.member(1), await world.member(2)
    fastest = await result(world, ada, 8.0)
    await result(world, bob, 3.0)
    for n in range(2):  # other/task has as many results, all void below: it is no longer busiest
        await result(world, bob, 1.0 + n, task="other/task")
    await do_void(world, fastest)
    async with world.sessions() as session:
        best = await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK)
    assert best is not None
    assert (best.task_ref, best.results, best.member_id, best.ratio) == (
        "other/task",
        2,
        bob,
        2.0,
    )
    async with world.sessions() as session:
        others = await recent_results(session, GUILD_ID, voided=False)
    for other in others:
        if other.task_ref == "other/task":
            await do_void(world, other.submission_id)
    async with world.sessions() as session:
        best = await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK)
    assert best is not None
    assert (best.task_ref, best.results, best.member_id, best.ratio) == (TASK, 1, bob, 3.0)


async def test_a_void_survives_a_regrade_and_never_touches_xp(world: World) -> None:
    ada = await world.member(1)
    submission_id = await submission(world, ada, speed=trial(4.0))
    assert await settled(world, submission_id)
    async with world.sessions() as session:
        ledger = await ledger_rows(session)
    assert ledger  # the pass paid XP
    await do_void(world, submission_id, "timed a cached result")
    async with world.sessions() as session, session.begin():  # a regrade's new trial
        await record_speed(
            session,
            guild_id=GUILD_ID,
            member_id=ada,
            submission_id=submission_id,
            task_ref=TASK,
            speed=trial(6.0),
            submitted_at=NOW + timedelta(hours=1),
            now=NOW + timedelta(hours=1),
        )
    async with world.sessions() as session:
        row = await session.scalar(select(SpeedRecord))
        after = await ledger_rows(session)
    assert row is not None and row.ratio == 6.0  # the new trial replaced the old one
    assert row.voided_at is not None and row.void_reason == "timed a cached result"
    assert await board_of(world) == []
    assert after == ledger
    await do_restore(world, submission_id)
    async with world.sessions() as session:
        assert await ledger_rows(session) == ledger


async def test_void_and_restore_are_audited(world: World) -> None:
    ada = await world.member(1)
    submission_id = await result(world, ada, 5.0)
    await do_void(world, submission_id, "  shared the kernel  ")
    await do_restore(world, submission_id)
    async with world.sessions() as session:
        entries = list(await session.scalars(select(AuditEntry).order_by(AuditEntry.id)))
    assert [(e.action, e.actor_user_id, e.target) for e in entries] == [
        ("speed.void", MOD, "user:1"),
        ("speed.restore", MOD, "user:1"),
    ]
    assert entries[0].details["reason"] == "shared the kernel"
    assert entries[0].details["submission_id"] == submission_id
    assert entries[1].details["voided_for"] == "shared the kernel"
    assert set(entries[0].details) == {  # never the user id: a deletion leaves no key back
        "submission_id",
        "task_ref",
        "device",
        "board_ratio",
        "reason",
    }


async def test_refusals(world: World) -> None:
    ada = await world.member(1)
    ranked = await result(world, ada, 5.0)
    plain = await submission(world, ada)  # passed, but never speed-ranked
    async with world.sessions() as session, session.begin():
        stranger = await ensure_member(session, GUILD_ID + 1, 9, "elsewhere")
    foreign = await result(world, stranger.id, 1.0)  # a result of another server
    async with world.sessions() as session, session.begin():
        row = await session.scalar(select(SpeedRecord).where(SpeedRecord.submission_id == foreign))
        assert row is not None
        row.guild_id = GUILD_ID + 1
        sub = await session.get(Submission, foreign)
        assert sub is not None
        sub.guild_id = GUILD_ID + 1

    cases = [
        (do_void(world, 99_999), NoSuchSubmission(99_999)),
        (do_void(world, foreign), OtherServer(foreign)),
        (do_void(world, plain), NotSpeedRanked(plain)),
        (do_restore(world, ranked), NotVoid(ranked)),
        (do_restore(world, foreign), OtherServer(foreign)),
    ]
    for attempt, refusal in cases:
        with pytest.raises(VoidRefused) as refused:
            await attempt
        assert refused.value.refusal == refusal
    await do_void(world, ranked, "first")
    with pytest.raises(VoidRefused) as twice:
        await do_void(world, ranked, "second")
    assert twice.value.refusal == AlreadyVoid(ranked, "first")
    async with world.sessions() as session:
        row = await session.scalar(select(SpeedRecord).where(SpeedRecord.submission_id == ranked))
        actions = list(await session.scalars(select(AuditEntry.action)))
    assert row is not None and row.void_reason == "first"
    assert actions == ["speed.void"]  # a refusal audits nothing
    with pytest.raises(ValueError):
        await do_void(world, foreign, "   ")


async def test_the_notice_is_claimed_once_and_a_restore_withdraws_it(world: World) -> None:
    ada = await world.member(1)
    submission_id = await result(world, ada, 5.0)
    async with world.sessions() as session, session.begin():
        assert await claim_notice(session, submission_id=submission_id, now=NOW) is None
    await do_void(world, submission_id, "shared kernel")
    async with world.sessions() as session, session.begin():
        notice = await claim_notice(session, submission_id=submission_id, now=NOW)
    assert notice is not None
    assert (notice.user_id, notice.task_ref, notice.reason, notice.guild_id) == (
        1,
        TASK,
        "shared kernel",
        GUILD_ID,
    )
    async with world.sessions() as session, session.begin():
        assert await claim_notice(session, submission_id=submission_id, now=NOW) is None
        await release_notice(session, submission_id=submission_id)  # the DM failed
    async with world.sessions() as session, session.begin():
        assert await claim_notice(session, submission_id=submission_id, now=NOW) is not None
    await do_restore(world, submission_id)
    async with world.sessions() as session, session.begin():
        await release_notice(session, submission_id=submission_id)
        assert await claim_notice(session, submission_id=submission_id, now=NOW) is None


async def test_recent_results_for_the_autocomplete(world: World) -> None:
    ada, bob = await world.member(1, "ada"), await world.member(2, "bob")
    old = await result(world, ada, 5.0)
    new = await result(world, bob, 3.0, when=INSIDE + timedelta(hours=2))
    await do_void(world, old)
    async with world.sessions() as session:
        live = await recent_results(session, GUILD_ID, voided=False)
        void_ones = await recent_results(session, GUILD_ID, voided=True)
        other = await recent_results(session, GUILD_ID + 1, voided=False)
    assert [(r.submission_id, r.display_name, r.task_ref, r.board_ratio) for r in live] == [
        (new, "bob", TASK, 3.0)
    ]
    assert [(r.submission_id, r.voided) for r in void_ones] == [(old, True)]
    assert other == ()


async def test_the_export_shows_the_void_and_the_member_page_skips_it(world: World) -> None:
    ada = await world.member(1)
    voided = await result(world, ada, 5.0)
    kept = await result(world, ada, 2.0, device=CPU)
    await do_void(world, voided, "shared kernel")
    async with world.sessions() as session:
        data = await privacy.export(session, guild_id=GUILD_ID, user_id=1, now=NOW)
        guild = await session.get(Guild, GUILD_ID)
        assert guild is not None
        page = await member_page(session, guild=guild, user_id=1, now=NOW, task_refs_by_quest={})
    assert data is not None
    assert [(s.submission_id, s.void_reason) for s in data.speed_results] == [
        (voided, "shared kernel"),
        (kept, None),
    ]
    assert data.speed_results[0].voided_at is not None
    assert '"void_reason": "shared kernel"' in privacy.export_json(data).decode()
    assert page is not None
    assert [(s.device, s.ratio) for s in page.speed] == [(CPU, 2.0)]


async def test_a_deleted_members_void_goes_with_their_data(world: World) -> None:
    ada = await world.member(1)
    submission_id = await result(world, ada, 5.0)
    await do_void(world, submission_id)
    async with world.sessions() as session, session.begin():
        await privacy.delete_member_data(session, guild_id=GUILD_ID, user_id=1, now=NOW)
    async with world.sessions() as session:
        assert list(await session.scalars(select(SpeedRecord))) == []
        targets = list(await session.scalars(select(AuditEntry.target)))
    assert "user:1" not in targets
