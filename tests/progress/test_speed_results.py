"""Speed boards: settling records a passing trial once (never XP), boards rank each member's best
board ratio per device class without hidden members, only results of today's instrument rank
(retired ones are counted, never ranked), the week's fastest, and privacy export and delete."""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
import sys
from datetime import datetime, time, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import delete, event, func, select, update

from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import SpeedRecord, Submission, XpEntry
from bot.delivery.outcomes import settle
from bot.progress import privacy
from bot.progress.highlights import weekly_highlights
from bot.progress.periods import week_of
from bot.progress.speed_results import (
    fastest_of_week,
    is_speed_ranked,
    record_speed,
    speed_board,
    speed_task_refs,
)
from graders.base import SPEED_INSTRUMENT, Bound, Check, SpeedResult, Verdict
from graders.bottleneck import RooflineFigures
from tests import timeline
from tests.progress.world import BERLIN, GUILD_ID, World
from tests.support import REPO

#: a week after the real now, and noon on its Wednesday in Berlin
MONDAY = timeline.monday_after(timeline.now(), days=7).date()
WEEK = week_of(MONDAY, BERLIN)
NOW = timeline.local(MONDAY + timedelta(days=2), time(12, 0), BERLIN)
TASK = "go-brrrr/matmul-three-ways"
GPU, CPU = "NVIDIA H200", "AMD EPYC 7B13"


#: the instrument before today's: its results are retired
RETIRED = SPEED_INSTRUMENT - 1


def trial(
    ratio: float,
    device: str = GPU,
    *,
    board_ratio: float | None = None,
    instrument: int = SPEED_INSTRUMENT,
) -> SpeedResult:
    """A trial of today's instrument whose board ratio is its ratio unless given."""
    return SpeedResult(
        ratio=ratio,
        learner_s=0.01 / ratio,
        reference_s=0.01,
        spread=0.04,
        pairs=15,
        device=device,
        instrument=instrument,
        board_ratio=ratio if board_ratio is None else board_ratio,
    )


async def submission(
    world: World, member_id: int, *, status: str = "passed", speed: SpeedResult | None = None
) -> int:
    """A finished, unsettled submission whose stored verdict carries ``speed``."""
    code = f"def matmul(a, b): return a @ b  # {member_id} {speed}\n".encode()
    checks = (Check("correct", status == "passed", "ok"),)
    score = 1.0 if status == "passed" else 0.0
    verdict = Verdict(TASK, status, score, checks, "", speed=speed)  # type: ignore[arg-type]
    async with world.sessions() as session, session.begin():
        row = Submission(
            guild_id=GUILD_ID,
            member_id=member_id,
            task_ref=TASK,
            filename="solution.py",
            file_kind="py",
            content=code,
            size_bytes=len(code),
            sha256=hashlib.sha256(code).hexdigest(),
            status=status,
            score=verdict.score,
            verdict=verdict.to_json(),
            finished_at=NOW,
        )
        session.add(row)
    return row.id


async def settled(world: World, submission_id: int, xp: int | None = 100) -> bool:
    async with world.sessions() as session, session.begin():
        return await settle(session, submission_id, xp, NOW) is not None


async def record(
    world: World,
    member_id: int,
    ratio: float,
    when: datetime,
    *,
    device: str = GPU,
    task: str = TASK,
    board_ratio: float | None = None,
    instrument: int = SPEED_INSTRUMENT,
) -> None:
    """A speed result without going through settling (the board tests need many)."""
    submission_id = await submission(world, member_id)
    async with world.sessions() as session, session.begin():
        await record_speed(
            session,
            guild_id=GUILD_ID,
            member_id=member_id,
            submission_id=submission_id,
            task_ref=task,
            speed=trial(ratio, device, board_ratio=board_ratio, instrument=instrument),
            submitted_at=when,
            now=when,
        )


async def speed_rows(world: World) -> list[tuple[int, float, str]]:
    async with world.sessions() as session:
        query = select(SpeedRecord.submission_id, SpeedRecord.ratio, SpeedRecord.device).order_by(
            SpeedRecord.id
        )
        return [tuple(row) for row in await session.execute(query)]


async def hide(world: World, user_id: int) -> None:
    async with world.sessions() as session, session.begin():
        await privacy.hide(session, guild_id=GUILD_ID, user_id=user_id, display_name="x")


async def test_settling_records_a_passing_trial_once_and_pays_the_same_xp(world: World) -> None:
    ada, bob = await world.member(1), await world.member(2)
    fast = await submission(world, ada, speed=trial(1.8))
    plain = await submission(world, bob)  # the same task, no trial: the XP to compare with
    failed = await submission(world, ada, status="failed", speed=trial(9.0))
    gone = await submission(world, bob, speed=trial(0.5, CPU))  # task no longer paid: XP None
    assert await settled(world, fast) and await settled(world, plain)
    assert await settled(world, failed) and await settled(world, gone, xp=None)
    assert not await settled(world, fast)  # a second settling finds it settled
    async with world.sessions() as session, session.begin():  # as a racing second process would
        await record_speed(
            session,
            guild_id=GUILD_ID,
            member_id=ada,
            submission_id=fast,
            task_ref=TASK,
            speed=trial(1.8),
            submitted_at=NOW,
            now=NOW,
        )
    assert await speed_rows(world) == [(fast, 1.8, GPU), (gone, 0.5, CPU)]
    totals = select(XpEntry.member_id, func.sum(XpEntry.amount)).group_by(XpEntry.member_id)
    async with world.sessions() as session:
        paid = dict((await session.execute(totals)).all())
    assert paid == {ada: 100, bob: 100}  # a trial is worth nothing on top

    # a regrade settles the same submission again: the new trial replaces the old one, no XP
    regraded = Verdict(TASK, "passed", 1.0, (), "", speed=trial(2.4, CPU)).to_json()
    async with world.sessions() as session, session.begin():
        await session.execute(
            update(Submission)
            .where(Submission.id == fast)
            .values(verdict=regraded, settled_at=None)
        )
    assert await settled(world, fast)
    assert await speed_rows(world) == [(fast, 2.4, CPU), (gone, 0.5, CPU)]
    assert len(await world.ledger(ada)) == 1


async def test_the_board_ranks_each_members_best_per_device(world: World) -> None:
    ada, bob, cyd, dan = [await world.member(n, f"user{n}") for n in (1, 2, 3, 4)]
    start = NOW - timedelta(days=3)
    await record(world, ada, 1.5, start)
    await record(world, ada, 3.0, start + timedelta(hours=1))  # ada's best on the GPU
    await record(world, ada, 3.0, start + timedelta(hours=5))  # equal: the earlier run counts
    await record(world, bob, 3.0, start + timedelta(hours=2))  # ties ada, got there later
    await record(world, cyd, 0.8, start)
    await record(world, dan, 9.9, start)  # hidden below: never on the board
    await record(world, bob, 1.2, start, device=CPU)
    await record(world, cyd, 2.0, start, device=CPU)
    await record(world, cyd, 50.0, start, task="other/task")
    await hide(world, 4)
    async with world.sessions() as session:
        board = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
        top_two = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK, per_device=2)
        nothing = await speed_board(session, guild_id=GUILD_ID, task_ref="nobody/yet")
        refs = await speed_task_refs(session, GUILD_ID)
    assert [(d.device, d.ranked) for d in board.devices] == [(GPU, 3), (CPU, 2)]
    gpu, cpu = board.devices
    assert [(e.rank, e.member_id, e.ratio) for e in gpu.entries] == [
        (1, ada, 3.0),
        (2, bob, 3.0),
        (3, cyd, 0.8),
    ]
    assert gpu.entries[0].achieved_at == start + timedelta(hours=1)
    assert gpu.entries[0].display_name == "user1" and gpu.entries[0].user_id == 1
    assert [(e.rank, e.member_id, e.ratio) for e in cpu.entries] == [(1, cyd, 2.0), (2, bob, 1.2)]
    assert [len(d.entries) for d in top_two.devices] == [2, 2] and top_two.devices[0].ranked == 3
    assert nothing.empty and nothing.task_ref == "nobody/yet"
    assert refs == ("go-brrrr/matmul-three-ways", "other/task")


async def test_fastest_of_the_week(world: World) -> None:
    ada, bob, cyd = [await world.member(n) for n in (1, 2, 3)]
    async with world.sessions() as session:
        assert await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK) is None
    inside = WEEK.start + timedelta(hours=30)
    await record(world, ada, 2.0, inside, device=CPU)
    await record(world, bob, 3.1, inside + timedelta(hours=1))
    await record(world, cyd, 8.0, inside)  # the fastest, but hidden below
    await record(world, ada, 99.0, WEEK.start - timedelta(seconds=1))  # the week before
    await record(world, bob, 99.0, WEEK.end)  # the week after
    for n in range(2):  # a task tried less often that week, with a higher ratio
        await record(world, ada, 20.0 + n, inside, task="other/task")
    await hide(world, 3)
    async with world.sessions() as session:
        best = await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK)
        later = await fastest_of_week(
            session, guild_id=GUILD_ID, week=week_of(MONDAY + timedelta(days=14), BERLIN)
        )
        highlights = await weekly_highlights(
            session, guild_id=GUILD_ID, week=WEEK, tz=BERLIN, now=WEEK.end
        )
    assert best is not None
    assert (best.task_ref, best.results, best.member_id, best.ratio, best.device) == (
        TASK,
        2,
        bob,
        3.1,
        GPU,
    )
    assert best.user_id == 2 and best.week_key == WEEK.key
    assert later is None
    assert highlights.fastest == best


async def test_settling_stores_the_instrument_and_the_ranked_ratio(world: World) -> None:
    ada = await world.member(1)
    bounded = await submission(world, ada, speed=trial(1.8, board_ratio=1.5))
    # a verdict stored before instruments were named reads as instrument 1, without a bound
    old = SpeedResult(ratio=2.2, learner_s=0.1, reference_s=0.22, spread=0.1, pairs=21, device=CPU)
    unbounded = await submission(world, ada, speed=old)
    assert await settled(world, bounded) and await settled(world, unbounded)
    query = select(
        SpeedRecord.submission_id,
        SpeedRecord.ratio,
        SpeedRecord.board_ratio,
        SpeedRecord.instrument,
    ).order_by(SpeedRecord.id)
    async with world.sessions() as session:
        rows = [tuple(row) for row in await session.execute(query)]
    assert rows == [(bounded, 1.8, 1.5, SPEED_INSTRUMENT), (unbounded, 2.2, 2.2, 1)]


async def test_the_board_ranks_the_board_ratio_not_the_ratio(world: World) -> None:
    ada, bob, cyd, dan = [await world.member(n) for n in (1, 2, 3, 4)]
    start = NOW - timedelta(days=3)
    # (ratio, board ratio) per member: a high median with a wide spread ranks low
    runs = {
        ada: [(3.0, 1.4)],
        bob: [(2.0, 1.9)],
        cyd: [(1.6, 1.5)],
        dan: [(5.0, 1.0), (2.2, 2.1)],  # a lucky median; the steadier run is dan's best
    }
    for member_id, results in runs.items():
        for n, (ratio, board_ratio) in enumerate(results):
            when = start + timedelta(hours=n)
            await record(world, member_id, ratio, when, board_ratio=board_ratio)
    best = {member_id: max(results, key=lambda r: r[1]) for member_id, results in runs.items()}
    expected = sorted(best.items(), key=lambda item: -item[1][1])
    assert [m for m, _ in expected] == [dan, bob, cyd, ada]  # not the order of the ratios
    async with world.sessions() as session:
        board = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
    (gpu,) = board.devices
    assert [(e.member_id, (e.ratio, e.board_ratio)) for e in gpu.entries] == expected
    assert [e.rank for e in gpu.entries] == [1, 2, 3, 4]


async def test_the_fastest_of_the_week_is_the_best_board_ratio(world: World) -> None:
    ada, bob = await world.member(1), await world.member(2)
    inside = WEEK.start + timedelta(hours=30)
    runs = {ada: (9.0, 1.2), bob: (3.0, 2.5)}
    for member_id, (ratio, board_ratio) in runs.items():
        await record(world, member_id, ratio, inside, board_ratio=board_ratio)
    fastest_member = max(runs, key=lambda m: runs[m][1])
    assert fastest_member == bob  # ada has the higher ratio
    async with world.sessions() as session:
        best = await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK)
    assert best is not None
    assert (best.member_id, best.ratio, best.board_ratio) == (bob, *runs[bob])


async def test_retired_results_never_rank_and_are_counted(world: World) -> None:
    ada, bob, cyd, dan, eve = [await world.member(n) for n in (1, 2, 3, 4, 5)]
    inside = WEEK.start + timedelta(hours=30)
    await record(world, ada, 9.9, inside, instrument=RETIRED)  # ada has only retired results
    await record(world, ada, 7.0, inside, device=CPU, instrument=RETIRED)
    await record(world, bob, 8.0, inside, instrument=RETIRED)
    await record(world, bob, 1.5, inside + timedelta(hours=1))  # bob resubmitted
    await record(world, cyd, 2.0, inside, device=CPU)
    await record(world, eve, 5.0, inside, instrument=RETIRED)  # hidden below: not counted
    for n in range(3):  # the most results that week, all retired, on a task nobody ranks on
        await record(world, dan, 30.0 + n, inside, task="other/task", instrument=RETIRED)
    await hide(world, 5)
    async with world.sessions() as session:
        board = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
        other = await speed_board(session, guild_id=GUILD_ID, task_ref="other/task")
        best = await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK)
        refs = await speed_task_refs(session, GUILD_ID)
    ranked = {(d.device, e.member_id, e.ratio) for d in board.devices for e in d.entries}
    assert ranked == {(GPU, bob, 1.5), (CPU, cyd, 2.0)}
    assert board.retired == 1  # ada: bob ranks, eve is hidden
    assert other.empty and other.retired == 1
    assert refs == (TASK,)  # other/task has no board to offer
    assert best is not None
    assert (best.task_ref, best.results, best.member_id, best.ratio) == (TASK, 2, cyd, 2.0)

    async with world.sessions() as session, session.begin():  # all retired: no fastest at all
        await session.execute(update(SpeedRecord).values(instrument=RETIRED))
    async with world.sessions() as session:
        assert await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK) is None
        board = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
    assert board.empty and board.retired == 3


async def test_export_lists_the_trials_and_delete_removes_them(world: World) -> None:
    ada, bob = await world.member(1), await world.member(2)
    mine = await submission(world, ada, speed=trial(1.8))
    theirs = await submission(world, bob, speed=trial(2.5))
    kept = await submission(world, bob, speed=trial(3.5))
    for submission_id in (mine, theirs, kept):
        await settled(world, submission_id)
    async with world.sessions() as session:
        data = await privacy.export(session, guild_id=GUILD_ID, user_id=1, now=NOW)
    assert data is not None
    assert [
        (s.submission_id, s.task_ref, s.device, s.ratio, s.pairs, s.instrument, s.board_ratio)
        for s in data.speed_results
    ] == [(mine, TASK, GPU, 1.8, 15, SPEED_INSTRUMENT, 1.8)]
    assert '"speed_results"' in privacy.export_json(data).decode()

    async with world.sessions() as session, session.begin():
        await privacy.delete_member_data(session, guild_id=GUILD_ID, user_id=1, now=NOW)
    assert [row[0] for row in await speed_rows(world)] == [theirs, kept]
    # and a submission deleted on its own takes its trial with it (the foreign key cascades,
    # on SQLite too: the engine turns foreign keys on)
    async with world.sessions() as session, session.begin():
        await session.execute(delete(Submission).where(Submission.id == theirs))
    assert [row[0] for row in await speed_rows(world)] == [kept]


async def test_the_board_searches_the_ranking_index(sqlite_url: str) -> None:
    """SQLite's plan for the board: the rows of one task and instrument, found by the index (so
    retired rows cost the board nothing as they pile up)."""
    engine = make_engine(sqlite_url)
    try:
        await migrate.upgrade(engine)
        selects: list[tuple[str, Any]] = []

        def grab(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
            if statement.lstrip().upper().startswith("SELECT"):
                selects.append((statement, params))

        event.listen(engine.sync_engine, "before_cursor_execute", grab)
        async with make_sessionmaker(engine)() as session:
            await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
        event.remove(engine.sync_engine, "before_cursor_execute", grab)
        board, *_ = selects
        async with engine.connect() as connection:
            plan = await connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {board[0]}", board[1])
            steps = [row[-1] for row in plan]
    finally:
        await engine.dispose()
    index = "ix_speed_results_guild_id_task_ref_instrument_device"
    search = (
        f"SEARCH speed_results USING INDEX {index} (guild_id=? AND task_ref=? AND instrument=?)"
    )
    assert search in steps, steps


def test_speed_ranked_is_a_task_with_speed() -> None:
    assert is_speed_ranked(SimpleNamespace(speed=SimpleNamespace(function="f", reference="g")))
    assert not is_speed_ranked(SimpleNamespace(speed=None))
    assert not is_speed_ranked(SimpleNamespace())


def test_the_speed_board_imports_neither_torch_nor_discord() -> None:
    code = (
        "import bot.progress.speed_results, sys; "
        "assert 'torch' not in sys.modules and 'discord' not in sys.modules"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr


async def test_the_roofline_figures_are_kept_and_drawn_again_from_the_row(world: World) -> None:
    """Settling keeps what placed the trial on the roofline, so the weekly post draws the
    same picture as the verdict; a row stored without them draws none."""
    ada, bob = await world.member(1), await world.member(2)
    measured = dataclasses.replace(
        trial(4.0, CPU),
        moved_bytes=8_392_704,
        flops=6_291_456,
        achieved_gbs=2.0,
        reference_gbs=1.4,
        achieved_gflops=1.5,
        reference_gflops=1.05,
        peak_gbs=17.2,
        peak_gflops=150.0,
        bound=Bound.NEITHER,
    )
    submission_id = await submission(world, ada, speed=measured)
    assert await settled(world, submission_id)
    await record(world, bob, 2.0, NOW)  # no figures: measured before they were kept
    async with world.sessions() as session:
        stored = (
            await session.scalars(select(SpeedRecord).where(SpeedRecord.member_id == ada))
        ).one()
        best = await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK)
        exported = await privacy.export(session, guild_id=GUILD_ID, user_id=1, now=NOW)
    assert (stored.moved_bytes, stored.flops, stored.bound) == (8_392_704, 6_291_456, "neither")
    assert (stored.achieved_gbs, stored.reference_gbs, stored.peak_gbs) == (2.0, 1.4, 17.2)
    assert (stored.achieved_gflops, stored.reference_gflops, stored.peak_gflops) == (
        1.5,
        1.05,
        150.0,
    )
    assert best is not None and best.member_id == ada
    assert best.figures == RooflineFigures(
        8_392_704, 6_291_456, 1.5, 1.05, 17.2, 150.0, Bound.NEITHER
    )
    assert exported is not None
    (mine,) = exported.speed_results
    assert (mine.moved_bytes, mine.bound, mine.peak_gflops) == (8_392_704, "neither", 150.0)
    await hide(world, 1)
    async with world.sessions() as session:
        second = await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK)
    assert second is not None and second.member_id == bob and second.figures is None
