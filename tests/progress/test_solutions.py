"""Shared solutions: readable only after a pass, one per sharing member in the order the rules
give, hidden at once when sharing stops, paged; reading is recorded once, marks the results
submitted after it and ranks them below every result made before, and never changes XP."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

import pytest
from sqlalchemy import func, select, update

from bot.db.models import Guild, Member, SolutionRead, SpeedRecord, Submission, XpEntry
from bot.delivery.outcomes import settle
from bot.progress import privacy, solutions
from bot.progress.public import member_page
from bot.progress.solutions import (
    ExportedRead,
    ExportedShare,
    ExportedSharing,
    NotPassed,
    SolutionsPage,
    SolutionsRefused,
)
from bot.progress.speed_results import fastest_of_week, speed_board
from bot.progress.speed_voids import void
from graders.base import SPEED_INSTRUMENT, Check, SpeedResult, Verdict
from tests.progress.test_speed_results import GPU, TASK, WEEK
from tests.progress.world import GUILD_ID, World

T0 = WEEK.start + timedelta(hours=30)  # inside the week, so the week's fastest sees the results
OTHER_TASK = "go-brrrr/other"


async def passes(
    world: World,
    member_id: int,
    at: datetime,
    *,
    ratio: float | None = None,
    status: str = "passed",
    sentence: str = "",
    task: str = TASK,
    instrument: int = SPEED_INSTRUMENT,
) -> int:
    """A submission made at ``at`` whose verdict (with a speed trial of ``ratio``, named by
    ``sentence``) the bot settles a minute later; its id."""
    code = f"def matmul(a, b):  # member {member_id} at {at.isoformat()} ratio {ratio}\n".encode()
    speed = (
        None
        if ratio is None
        else SpeedResult(
            ratio=ratio,
            learner_s=0.01 / ratio,
            reference_s=0.01,
            spread=0.04,
            pairs=15,
            device=GPU,
            instrument=instrument,
            board_ratio=ratio,
            bound_sentence=sentence,
        )
    )
    passed = status == "passed"
    verdict = Verdict(
        task, status, float(passed), (Check("correct", passed, "ok"),), "", speed=speed
    )  # type: ignore[arg-type]
    async with world.sessions() as session, session.begin():
        row = Submission(
            guild_id=GUILD_ID,
            member_id=member_id,
            task_ref=task,
            filename="solution.py",
            file_kind="py",
            content=code,
            size_bytes=len(code),
            sha256=hashlib.sha256(code).hexdigest(),
            status=status,
            score=verdict.score,
            verdict=verdict.to_json(),
            finished_at=at + timedelta(minutes=1),
            created_at=at,
        )
        session.add(row)
        await session.flush()
        submission_id = row.id
    async with world.sessions() as session, session.begin():
        assert await settle(session, submission_id, 100, at + timedelta(minutes=1)) is not None
    return submission_id


async def sharing(world: World, member_id: int, on: bool = True) -> bool:
    async with world.sessions() as session, session.begin():
        user_id, name = (
            await session.execute(
                select(Member.user_id, Member.display_name).where(Member.id == member_id)
            )
        ).one()
        return await solutions.set_sharing(
            session, guild_id=GUILD_ID, user_id=user_id, display_name=name, on=on
        )


async def page(
    world: World,
    user_id: int,
    number: int = 0,
    *,
    speed_ranked: bool = True,
    now: datetime = T0 + timedelta(days=1),
    task: str = TASK,
) -> SolutionsPage:
    async with world.sessions() as session, session.begin():
        return await solutions.open_page(
            session,
            guild_id=GUILD_ID,
            user_id=user_id,
            task_ref=task,
            speed_ranked=speed_ranked,
            page=number,
            now=now,
        )


def shown(found: SolutionsPage) -> list[tuple[int, int, float | None]]:
    """(position, author's user id, board ratio) of each solution on the page."""
    return [
        (s.position, s.user_id, s.speed.board_ratio if s.speed else None) for s in found.solutions
    ]


async def test_only_a_member_who_passed_the_task_may_read_its_solutions(world: World) -> None:
    author = await world.member(1)
    await passes(world, author, T0, ratio=2.0)
    await sharing(world, author)
    failed, other_task = await world.member(2), await world.member(3)
    await passes(world, failed, T0, status="failed")
    await passes(world, other_task, T0, task=OTHER_TASK)
    for user_id in (2, 3, 99):  # failed it; passed another task; never seen by the bot
        with pytest.raises(SolutionsRefused) as refused:
            await page(world, user_id)
        assert refused.value.refusal == NotPassed(TASK)
    async with world.sessions() as session:
        assert await session.scalar(select(func.count()).select_from(SolutionRead)) == 0
    reader = await world.member(4)
    await passes(world, reader, T0)
    assert shown(await page(world, 4)) == [(1, 1, 2.0)]


async def test_one_solution_per_sharing_listed_member_fastest_first(world: World) -> None:
    ids = {
        name: await world.member(n, name)
        for n, name in enumerate(("ada", "bob", "cyd", "dan", "eve", "fay", "gus", "rea"), start=1)
    }
    slow = await passes(world, ids["ada"], T0, ratio=1.5)
    fast = await passes(
        world,
        ids["ada"],
        T0 + timedelta(hours=1),
        ratio=2.5,
        sentence="Memory-bound: 81% of 4.8 TB/s.",
    )
    await passes(world, ids["ada"], T0 + timedelta(hours=2), status="failed")
    await passes(world, ids["bob"], T0, ratio=3.0)
    await passes(world, ids["cyd"], T0, ratio=9.0)  # does not share
    await passes(world, ids["dan"], T0, ratio=8.0)  # shares, but hidden from the boards
    await passes(world, ids["eve"], T0, status="failed")  # shares, never passed
    unranked = await passes(world, ids["fay"], T0)  # passed without a ranked result
    forged = await passes(world, ids["gus"], T0, ratio=7.0)
    honest = await passes(world, ids["gus"], T0 + timedelta(hours=1), ratio=1.2)
    await passes(
        world, ids["gus"], T0 + timedelta(hours=3), ratio=6.0, instrument=SPEED_INSTRUMENT - 1
    )
    await passes(world, ids["rea"], T0, ratio=5.0)  # the reader: never their own
    for name in ("ada", "bob", "dan", "eve", "fay", "gus", "rea"):
        assert await sharing(world, ids[name])
    async with world.sessions() as session, session.begin():
        await session.execute(update(Member).where(Member.id == ids["dan"]).values(hidden=True))
        await void(
            session,
            guild_id=GUILD_ID,
            submission_id=forged,
            reason="forged",
            actor_user_id=7,
            now=T0,
        )

    found = await page(world, 8)
    assert shown(found) == [(1, 2, 3.0), (2, 1, 2.5), (3, 7, 1.2), (4, 6, None)]
    assert [s.submission_id for s in found.solutions][1:] == [fast, honest, unranked]
    assert slow not in [s.submission_id for s in found.solutions]
    assert found.solutions[1].speed is not None
    assert found.solutions[1].speed.bound_sentence == "Memory-bound: 81% of 4.8 TB/s."
    assert found.solutions[1].display_name == "ada"
    assert found.solutions[1].code.startswith(b"def matmul(a, b):  # member")
    assert (found.total, found.pages) == (4, 1)

    # not speed-ranked: each member's newest pass, newest first
    newest = await page(world, 8, speed_ranked=False)
    assert [(s.user_id, s.submission_id) for s in newest.solutions][:2] == [
        (7, (await _newest_pass(world, ids["gus"]))),
        (1, fast),
    ]
    assert all(s.speed is None for s in newest.solutions)


async def _newest_pass(world: World, member_id: int) -> int:
    async with world.sessions() as session:
        newest = await session.scalar(
            select(Submission.id)
            .where(Submission.member_id == member_id, Submission.status == "passed")
            .order_by(Submission.created_at.desc())
            .limit(1)
        )
    assert newest is not None
    return newest


async def test_sharing_off_hides_at_once_and_on_again_brings_it_back(world: World) -> None:
    author, reader = await world.member(1), await world.member(2)
    await passes(world, author, T0, ratio=2.0)
    await passes(world, reader, T0, ratio=1.0)
    assert shown(await page(world, 2)) == []  # nobody shares: off by default
    assert await sharing(world, author) and not await sharing(world, author)  # on is idempotent
    assert shown(await page(world, 2)) == [(1, 1, 2.0)]
    assert await sharing(world, author, on=False)
    assert shown(await page(world, 2)) == []
    assert not await sharing(world, author, on=False)


async def test_pages_hold_five_and_a_page_past_the_end_is_the_last(world: World) -> None:
    reader = await world.member(100)
    await passes(world, reader, T0)
    for n in range(1, 13):
        member_id = await world.member(n)
        await passes(world, member_id, T0, ratio=float(n))
        await sharing(world, member_id)
    pages = [await page(world, 100, number) for number in range(3)]
    assert [len(p.solutions) for p in pages] == [5, 5, 2]
    assert [s.position for p in pages for s in p.solutions] == list(range(1, 13))
    assert [s.user_id for p in pages for s in p.solutions] == list(range(12, 0, -1))
    assert {(p.total, p.pages) for p in pages} == {(12, 3)}
    assert shown(await page(world, 100, 9)) == shown(pages[2])


async def test_reading_is_recorded_once_and_ranks_later_results_below(world: World) -> None:
    """The reader's result made after reading (5.0) ranks below bob's made before (1.1), and
    their own best before reading (1.0) is the one on the board; XP never moves."""
    reader, bob, author = await world.member(1), await world.member(2), await world.member(3)
    await passes(world, author, T0, ratio=2.0)
    await sharing(world, author)
    await passes(world, reader, T0, ratio=1.0)
    in_flight_at = T0 + timedelta(hours=2)  # submitted before reading, settled after
    opened = T0 + timedelta(hours=3)
    async with world.sessions() as session:
        ledger = list(await session.execute(select(XpEntry.__table__)))
    assert shown(await page(world, 1, now=opened)) == [(1, 3, 2.0)]
    assert shown(await page(world, 1, now=opened + timedelta(hours=5))) == [(1, 3, 2.0)]
    async with world.sessions() as session:
        assert list(await session.execute(select(XpEntry.__table__))) == ledger
        reads = list(await session.execute(select(SolutionRead.member_id, SolutionRead.opened_at)))
    assert reads == [(reader, opened)]  # the first moment only

    before = await passes(world, reader, in_flight_at, ratio=1.05)
    after = await passes(world, reader, opened + timedelta(minutes=30), ratio=5.0)
    await passes(world, bob, opened + timedelta(hours=1), ratio=1.1)
    async with world.sessions() as session:
        marks = dict(
            (
                await session.execute(select(SpeedRecord.submission_id, SpeedRecord.after_reading))
            ).all()
        )
        board = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
        fastest = await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK)
    assert marks[before] is False and marks[after] is True
    async with world.sessions() as session:
        guild = await session.get(Guild, GUILD_ID)
        assert guild is not None
        own = await member_page(session, guild=guild, user_id=1, now=T0, task_refs_by_quest={})
    assert own is not None  # their page shows the best before reading, as the board does
    assert [(s.board_ratio, s.after_reading) for s in own.speed] == [(1.05, False)]
    assert sum(marks.values()) == 1
    (device,) = board.devices
    assert [(e.member_id, e.board_ratio, e.after_reading) for e in device.entries] == [
        (author, 2.0, False),
        (bob, 1.1, False),
        (reader, 1.05, False),
    ]
    assert fastest is not None and (fastest.member_id, fastest.after_reading) == (author, False)


async def test_a_result_after_reading_ranks_only_below_and_shows_its_mark(world: World) -> None:
    """A member with results only after reading is on the board, last, marked; the week's
    fastest falls to them only when nobody made one before reading."""
    reader, bob, author = await world.member(1), await world.member(2), await world.member(3)
    await passes(world, author, T0 - timedelta(days=30), ratio=2.0)  # before the week
    await sharing(world, author)
    await passes(world, reader, T0)  # passed without a ranked result
    await page(world, 1, now=T0 + timedelta(minutes=5))
    await passes(world, reader, T0 + timedelta(hours=1), ratio=9.0)
    async with world.sessions() as session:
        fastest = await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK)
    assert fastest is not None and (fastest.member_id, fastest.after_reading) == (reader, True)
    await passes(world, bob, T0 + timedelta(hours=2), ratio=0.5)
    async with world.sessions() as session:
        board = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
        fastest = await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK)
    assert [(e.rank, e.member_id, e.after_reading) for e in board.devices[0].entries] == [
        (1, author, False),
        (2, bob, False),
        (3, reader, True),
    ]
    assert fastest is not None and fastest.member_id == bob


async def test_nothing_to_show_records_no_read(world: World) -> None:
    reader = await world.member(1)
    await passes(world, reader, T0, ratio=1.0)
    async with world.sessions() as session, session.begin():
        seen = await solutions.overview(
            session, guild_id=GUILD_ID, user_id=1, task_ref=TASK, speed_ranked=True
        )
    assert (seen.total, seen.opened_at) == (0, None)
    empty = await page(world, 1)
    assert (empty.total, empty.pages, empty.solutions, empty.opened_at) == (0, 1, (), None)
    await passes(world, reader, T0 + timedelta(days=2), ratio=3.0)
    async with world.sessions() as session:
        assert not any(await session.scalars(select(SpeedRecord.after_reading)))


async def test_export_lists_the_sharing_and_delete_removes_it(world: World) -> None:
    author, reader = await world.member(1), await world.member(2)
    first = await passes(world, author, T0, ratio=2.0)
    await passes(world, author, T0 + timedelta(hours=1), status="failed")
    other = await passes(world, author, T0 + timedelta(hours=2), task=OTHER_TASK)
    await passes(world, reader, T0)
    await passes(world, reader, T0, task=OTHER_TASK)
    async with world.sessions() as session:
        quiet = await privacy.export(session, guild_id=GUILD_ID, user_id=1, now=T0)
    assert quiet is not None and quiet.sharing == ExportedSharing(False, (), ())
    await sharing(world, author)
    await sharing(world, reader)
    opened = T0 + timedelta(days=1)
    await page(world, 2, now=opened)
    await page(world, 2, now=opened + timedelta(hours=1), task=OTHER_TASK)
    async with world.sessions() as session:
        shared = await privacy.export(session, guild_id=GUILD_ID, user_id=1, now=T0)
        read = await privacy.export(session, guild_id=GUILD_ID, user_id=2, now=T0)
    assert shared is not None and shared.sharing == ExportedSharing(
        True, (ExportedShare(first, TASK), ExportedShare(other, OTHER_TASK)), ()
    )
    assert read is not None and read.sharing is not None
    assert read.sharing.opened == (
        ExportedRead(TASK, opened),
        ExportedRead(OTHER_TASK, opened + timedelta(hours=1)),
    )
    assert b'"opened_at"' in privacy.export_json(read)
    async with world.sessions() as session, session.begin():  # hidden: nobody can read them
        await session.execute(update(Member).where(Member.id == author).values(hidden=True))
    async with world.sessions() as session:
        hidden = await privacy.export(session, guild_id=GUILD_ID, user_id=1, now=T0)
    assert hidden is not None and hidden.sharing == ExportedSharing(True, (), ())

    for user_id in (1, 2):
        async with world.sessions() as session, session.begin():
            await privacy.delete_member_data(session, guild_id=GUILD_ID, user_id=user_id, now=T0)
    async with world.sessions() as session:
        assert await session.scalar(select(func.count()).select_from(SolutionRead)) == 0
        assert list(await session.scalars(select(Member.shares_solutions))) == [False, False]
