"""Scheduled posts under a test-controlled clock: restarts, downtime, DST and zone changes.

One bot for the module; the clock only moves forward, so each test continues the
timeline of the one before (the post log's newest period decides what is due).  Every
moment is relative to the real now: the Monday after next, then the next clock changes
in Berlin and New York after it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, time, timedelta

import pytest
import pytest_asyncio

from tests.bot.conftest import MONDAY, World, start_world
from tests.bot.test_schedule import _daily, _weekly
from tests.timeline import BERLIN, NEW_YORK, TOKYO, local, local_day, transition

pytestmark = pytest.mark.asyncio(loop_scope="module")

DAY = timedelta(days=1)
#: the next Sunday Berlin springs forward (02:00 CET -> 03:00 CEST) after the first two weeks
SPRING = transition(BERLIN, MONDAY + 14 * DAY, forward=True)
SPRING_DAY = local_day(SPRING, BERLIN)
#: the next Sunday New York falls back (02:00 EDT -> 01:00 EST) after that
FALL = transition(NEW_YORK, SPRING + 7 * DAY, forward=False)
FALL_DAY = local_day(FALL, NEW_YORK)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("clock"), workers=0, clock=True):
        yield started


async def _setup(world: World, at: str, timezone: str, weekly_day: str = "Monday") -> None:
    handle = await world.fake.invoke_slash(
        world.guild,
        world.quests,
        world.owner,
        "admin setup",
        options={
            "channel": world.quests,
            "time": at,
            "timezone": timezone,
            "weekly_day": weekly_day,
        },
    )
    assert f"{at} ({timezone})" in (await handle.original()).content
    await world.settle()


async def test_a_restart_across_the_post_time_posts_daily_and_weekly_once(world: World) -> None:
    monday = MONDAY.date()
    await world.at(local(monday, time(7, 0), UTC))
    await _setup(world, "09:00", "UTC")
    assert _daily(world) == [] and _weekly(world) == []
    # Down at 08:59:50, back at 09:00:20: the post time passed while it was stopped.
    world.set_time(local(monday, time(8, 59, 50), UTC))
    await world.restart(local(monday, time(9, 0, 20), UTC))
    assert _daily(world) == [monday.isoformat()]
    assert len(_weekly(world)) == 1
    # A second restart in the same minute posts nothing more.
    await world.restart(local(monday, time(9, 0, 40), UTC))
    assert _daily(world) == [monday.isoformat()]
    assert len(_weekly(world)) == 1


async def test_days_of_downtime_give_one_catch_up_post(world: World) -> None:
    # Down from Monday to the Wednesday of the next week: 8 daily posts and one weekly
    # post were missed; one of each comes back.
    monday = MONDAY.date()
    wednesday = monday + 9 * DAY
    await world.restart(local(wednesday, time(10, 0), UTC))
    assert _daily(world) == [monday.isoformat(), wednesday.isoformat()]
    assert len(_weekly(world)) == 2
    await world.at(local(wednesday, time(18, 0), UTC))
    assert _daily(world) == [monday.isoformat(), wednesday.isoformat()]


async def test_berlin_spring_forward_posts_a_skipped_local_time_once(world: World) -> None:
    # 02:30 does not exist in Berlin on the spring-forward day: the post fires when the gap ends.
    # Set up first: the periods due at a moment are those of the settings in force then.
    saturday, sunday, monday = SPRING_DAY - DAY, SPRING_DAY, SPRING_DAY + DAY
    await _setup(world, "02:30", "Europe/Berlin", "Sunday")
    await world.at(local(saturday, time(12, 0), UTC))
    assert _daily(world)[-1] == saturday.isoformat()  # catch-up: 02:30 today has passed
    weekly = len(_weekly(world))
    await world.at(SPRING - timedelta(minutes=1))  # 01:59 CET
    assert sunday.isoformat() not in _daily(world)
    await world.at(SPRING + timedelta(seconds=30))  # 03:00:30 CEST
    assert _daily(world).count(sunday.isoformat()) == 1
    assert len(_weekly(world)) == weekly + 1  # Sunday: the weekly post too
    await world.at(SPRING + timedelta(hours=1))
    await world.at(local(monday, time(2, 30, 30), BERLIN))  # 02:30:30 CEST Monday
    assert _daily(world)[-2:] == [sunday.isoformat(), monday.isoformat()]
    assert _daily(world).count(sunday.isoformat()) == 1
    assert len(_weekly(world)) == weekly + 1


async def test_changing_the_time_zone_neither_repeats_nor_skips_a_day(world: World) -> None:
    # Monday was posted at 02:30 Berlin. Move the server to New York 09:00: at 09:00 in
    # New York it is still that Monday there, a day that already had its post.
    monday, tuesday, wednesday = SPRING_DAY + DAY, SPRING_DAY + 2 * DAY, SPRING_DAY + 3 * DAY
    await world.at(local(monday, time(3, 30), BERLIN))
    await _setup(world, "09:00", "America/New_York", "Sunday")
    await world.at(local(monday, time(9, 0, 30), NEW_YORK))
    assert _daily(world).count(monday.isoformat()) == 1
    await world.at(local(tuesday, time(9, 0, 30), NEW_YORK))  # the next New York day
    assert _daily(world)[-2:] == [monday.isoformat(), tuesday.isoformat()]
    # And east again: Tokyo's Wednesday 09:00 comes before New York's Tuesday ends.
    await world.at(local(tuesday, time(10, 0), NEW_YORK))
    await _setup(world, "09:00", "Asia/Tokyo", "Sunday")
    assert _daily(world)[-1] == tuesday.isoformat()
    tokyo_nine = local(wednesday, time(9, 0), TOKYO)
    assert tokyo_nine < local(wednesday, time(0, 0), NEW_YORK)
    await world.at(tokyo_nine + timedelta(seconds=30))
    assert _daily(world)[-3:] == [monday.isoformat(), tuesday.isoformat(), wednesday.isoformat()]
    assert len(set(_daily(world))) == len(_daily(world))


async def test_new_york_fall_back_posts_an_ambiguous_local_time_once(world: World) -> None:
    # 01:30 happens twice in New York on the fall-back day (EDT, then EST): one post, the first.
    saturday, sunday, monday = FALL_DAY - DAY, FALL_DAY, FALL_DAY + DAY
    await _setup(world, "01:30", "America/New_York", "Sunday")
    await world.at(local(saturday, time(12, 0), UTC))
    assert _daily(world)[-1] == saturday.isoformat()
    weekly = len(_weekly(world))
    first_half_past_one = FALL - timedelta(minutes=30)  # 01:30 EDT; FALL is 02:00 EDT
    await world.at(first_half_past_one - timedelta(minutes=1))  # 01:29 EDT
    assert sunday.isoformat() not in _daily(world)
    await world.at(first_half_past_one + timedelta(seconds=30))  # 01:30:30 EDT
    assert _daily(world).count(sunday.isoformat()) == 1
    assert len(_weekly(world)) == weekly + 1
    await world.at(FALL + timedelta(minutes=30, seconds=30))  # 01:30:30 EST, again
    await world.restart(FALL + timedelta(minutes=31))
    assert _daily(world).count(sunday.isoformat()) == 1
    assert len(_weekly(world)) == weekly + 1
    await world.at(local(monday, time(1, 30, 30), NEW_YORK))  # 01:30:30 EST Monday
    assert _daily(world)[-2:] == [sunday.isoformat(), monday.isoformat()]
