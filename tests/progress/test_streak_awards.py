"""Streaks and the daily bonus from real awards, on the server's local calendar."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.progress.world import BERLIN, NEW_YORK, World


def local(tz: ZoneInfo, *args: int) -> datetime:
    return datetime(*args, tzinfo=tz)


async def test_bonus_on_each_streak_day_grows_and_caps(world: World) -> None:
    ada = await world.member(1)
    start = local(BERLIN, 2026, 11, 1, 20, 0)
    awards = [
        await world.verdict(ada, start + timedelta(days=n), task=f"q{n}/build", xp=10)
        for n in range(8)
    ]
    assert [a.streak for a in awards] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [a.streak_bonus for a in awards] == [0, 5, 10, 15, 20, 25, 25, 25]
    assert awards[-1].new_total == 80 + 125
    bonuses = [e for e in await world.ledger(ada) if e.source == "streak"]
    assert [e.idempotency_key for e in bonuses][:2] == [
        f"streak:{ada}:2026-11-02",
        f"streak:{ada}:2026-11-03",
    ]


async def test_bonus_only_for_the_first_completion_of_the_day(world: World) -> None:
    ada = await world.member(1)
    await world.verdict(ada, local(BERLIN, 2026, 11, 1, 9, 0), task="q1/a")
    first = await world.verdict(ada, local(BERLIN, 2026, 11, 2, 0, 0), task="q1/b")
    second = await world.done(ada, local(BERLIN, 2026, 11, 2, 23, 59), "q1/c")
    assert (first.streak_bonus, second.streak_bonus) == (5, 0)
    assert second.streak == 2


async def test_awards_that_add_nothing_do_not_count(world: World) -> None:
    ada = await world.member(1)
    await world.verdict(ada, local(BERLIN, 2026, 11, 1, 9, 0))
    resubmitted = await world.verdict(ada, local(BERLIN, 2026, 11, 2, 9, 0))  # already paid
    failed = await world.verdict(
        ada, local(BERLIN, 2026, 11, 2, 10, 0), task="q2/b", score=0.2, status="failed"
    )
    assert (resubmitted.xp_added, resubmitted.streak_bonus, resubmitted.streak) == (0, 0, 1)
    assert failed.streak == 1
    later = await world.verdict(ada, local(BERLIN, 2026, 11, 3, 9, 0), task="q2/b")
    assert (later.streak, later.streak_bonus) == (1, 0)  # the 2nd was not a completion day


async def test_grants_do_not_make_a_streak(world: World) -> None:
    ada = await world.member(1)
    await world.grant(ada, 50, local(BERLIN, 2026, 11, 1, 9, 0))
    award = await world.verdict(ada, local(BERLIN, 2026, 11, 2, 9, 0))
    assert (award.streak, award.streak_bonus) == (1, 0)


async def test_streak_across_local_midnight_not_utc_midnight(world: World) -> None:
    ada = await world.member(1)
    # 23:30 and 00:30 Berlin are both on the same UTC date but on two local days.
    await world.verdict(ada, local(BERLIN, 2026, 11, 1, 23, 30), task="q1/a")
    award = await world.verdict(ada, local(BERLIN, 2026, 11, 2, 0, 30), task="q1/b")
    assert (award.streak, award.streak_bonus) == (2, 5)


async def test_streak_across_spring_forward_in_berlin(world: World) -> None:
    ada = await world.member(1)
    # Sunday 2026-03-29 has 23 hours.  The third completion is on the same UTC date as the
    # second (Mar 29 22:05 UTC) but on the next local day.
    times = [(2026, 3, 28, 23, 30), (2026, 3, 29, 23, 59), (2026, 3, 30, 0, 5)]
    awards = [
        await world.verdict(ada, local(BERLIN, *t), task=f"q{n}/build") for n, t in enumerate(times)
    ]
    assert [a.streak for a in awards] == [1, 2, 3]
    assert [a.streak_bonus for a in awards] == [0, 5, 10]


async def test_streak_across_fall_back_in_new_york(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    world = World(sessions, tz=NEW_YORK)
    ada = await world.member(1)
    # Sunday 2026-11-01 has 25 hours; 23:30 EST that day and 00:30 EST the next are the same UTC
    # date (Nov 2) but two local days.
    times = [(2026, 10, 31, 12, 0), (2026, 11, 1, 23, 30), (2026, 11, 2, 0, 30)]
    awards = [
        await world.verdict(ada, local(NEW_YORK, *t), task=f"q{n}/build")
        for n, t in enumerate(times)
    ]
    assert [a.streak for a in awards] == [1, 2, 3]


async def test_a_missed_local_day_breaks_the_streak(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    world = World(sessions, tz=NEW_YORK)
    ada = await world.member(1)
    await world.verdict(ada, local(NEW_YORK, 2026, 10, 31, 20, 0), task="q1/a")
    # 24 hours later is still Nov 1 locally (a 25-hour day) ...
    next_day = await world.verdict(ada, local(NEW_YORK, 2026, 11, 1, 19, 0), task="q1/b")
    # ... and Nov 3 after skipping Nov 2 starts over.
    after_gap = await world.verdict(ada, local(NEW_YORK, 2026, 11, 3, 0, 1), task="q1/c")
    assert (next_day.streak, after_gap.streak, after_gap.streak_bonus) == (2, 1, 0)
