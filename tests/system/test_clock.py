"""Scheduled posts under a test-controlled clock: restarts, downtime, DST and zone changes.

One bot for the module; the clock only moves forward, so each test continues the
timeline of the one before (the post log's newest period decides what is due).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import pytest_asyncio

from tests.bot.conftest import World, start_world
from tests.bot.test_schedule import _daily, _weekly

pytestmark = pytest.mark.asyncio(loop_scope="module")

SETTLE_S = 1.2  # six schedule ticks (0.2 s under test)
READY_S = 3.5  # on_ready comes ~2 s after the last GUILD_CREATE, then a tick


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("clock"), workers=0, clock=True):
        yield started


async def _at(world: World, moment: datetime) -> None:
    world.set_time(moment)
    await asyncio.sleep(SETTLE_S)


async def _setup(world: World, time: str, timezone: str, weekly_day: str = "Monday") -> None:
    handle = await world.fake.invoke_slash(
        world.guild,
        world.quests,
        world.owner,
        "admin setup",
        options={
            "channel": world.quests,
            "time": time,
            "timezone": timezone,
            "weekly_day": weekly_day,
        },
    )
    assert f"{time} ({timezone})" in (await handle.original()).content
    await asyncio.sleep(SETTLE_S)


async def _restart_at(world: World, moment: datetime) -> None:
    """Stop the bot, move the clock while it is down, start it again."""
    old = world.fake.gateway.session
    await world.bot.stop()
    world.set_time(moment)
    await world.bot.start()
    await world.fake.wait_until_connected(timeout=30, replacing=old)
    await asyncio.sleep(READY_S)


async def test_a_restart_across_the_post_time_posts_daily_and_weekly_once(world: World) -> None:
    await _at(world, datetime(2026, 11, 30, 7, 0, tzinfo=UTC))  # Monday, 07:00 UTC
    await _setup(world, "09:00", "UTC")
    assert _daily(world) == [] and _weekly(world) == []
    # Down at 08:59:50, back at 09:00:20: the post time passed while it was stopped.
    world.set_time(datetime(2026, 11, 30, 8, 59, 50, tzinfo=UTC))
    await _restart_at(world, datetime(2026, 11, 30, 9, 0, 20, tzinfo=UTC))
    assert _daily(world) == ["2026-11-30"]
    assert len(_weekly(world)) == 1
    # A second restart in the same minute posts nothing more.
    await _restart_at(world, datetime(2026, 11, 30, 9, 0, 40, tzinfo=UTC))
    assert _daily(world) == ["2026-11-30"]
    assert len(_weekly(world)) == 1


async def test_days_of_downtime_give_one_catch_up_post(world: World) -> None:
    # Down from Monday to the Wednesday of the next week: 8 daily posts and one weekly
    # post were missed; one of each comes back.
    await _restart_at(world, datetime(2026, 12, 9, 10, 0, tzinfo=UTC))
    assert _daily(world) == ["2026-11-30", "2026-12-09"]
    assert len(_weekly(world)) == 2
    await _at(world, datetime(2026, 12, 9, 18, 0, tzinfo=UTC))
    assert _daily(world) == ["2026-11-30", "2026-12-09"]


async def test_berlin_spring_forward_posts_a_skipped_local_time_once(world: World) -> None:
    # 02:30 does not exist in Berlin on 2027-03-28: the post fires when the gap ends.
    # Set up first: the periods due at a moment are those of the settings in force then.
    await _setup(world, "02:30", "Europe/Berlin", "Sunday")
    await _at(world, datetime(2027, 3, 27, 12, 0, tzinfo=UTC))
    assert _daily(world)[-1] == "2027-03-27"  # catch-up: 02:30 today has passed
    weekly = len(_weekly(world))
    await _at(world, datetime(2027, 3, 28, 0, 59, 0, tzinfo=UTC))  # 01:59 CET
    assert "2027-03-28" not in _daily(world)
    await _at(world, datetime(2027, 3, 28, 1, 0, 30, tzinfo=UTC))  # 03:00:30 CEST
    assert _daily(world).count("2027-03-28") == 1
    assert len(_weekly(world)) == weekly + 1  # Sunday: the weekly post too
    await _at(world, datetime(2027, 3, 28, 2, 0, tzinfo=UTC))
    await _at(world, datetime(2027, 3, 29, 0, 30, 30, tzinfo=UTC))  # 02:30:30 CEST Monday
    assert _daily(world)[-2:] == ["2027-03-28", "2027-03-29"]
    assert _daily(world).count("2027-03-28") == 1
    assert len(_weekly(world)) == weekly + 1


async def test_changing_the_time_zone_neither_repeats_nor_skips_a_day(world: World) -> None:
    # 2027-03-29 was posted at 02:30 Berlin (00:30 UTC). Move the server to New York 09:00:
    # at 13:00 UTC it is 09:00 on the 29th in New York, a day that already had its post.
    await _at(world, datetime(2027, 3, 29, 1, 0, tzinfo=UTC))
    await _setup(world, "09:00", "America/New_York", "Sunday")
    await _at(world, datetime(2027, 3, 29, 13, 0, 30, tzinfo=UTC))
    assert _daily(world).count("2027-03-29") == 1
    await _at(world, datetime(2027, 3, 30, 13, 0, 30, tzinfo=UTC))  # the next New York day
    assert _daily(world)[-2:] == ["2027-03-29", "2027-03-30"]
    # And east again: Tokyo 09:00 on the 31st is 00:00 UTC, earlier than New York's.
    await _at(world, datetime(2027, 3, 30, 14, 0, tzinfo=UTC))
    await _setup(world, "09:00", "Asia/Tokyo", "Sunday")
    assert _daily(world)[-1] == "2027-03-30"
    await _at(world, datetime(2027, 3, 31, 0, 0, 30, tzinfo=UTC))
    assert _daily(world)[-3:] == ["2027-03-29", "2027-03-30", "2027-03-31"]
    assert len(set(_daily(world))) == len(_daily(world))


async def test_new_york_fall_back_posts_an_ambiguous_local_time_once(world: World) -> None:
    # 01:30 happens twice in New York on 2027-11-07 (EDT, then EST): one post, the first.
    await _setup(world, "01:30", "America/New_York", "Sunday")
    await _at(world, datetime(2027, 11, 6, 12, 0, tzinfo=UTC))
    assert _daily(world)[-1] == "2027-11-06"
    weekly = len(_weekly(world))
    await _at(world, datetime(2027, 11, 7, 5, 29, tzinfo=UTC))  # 01:29 EDT
    assert "2027-11-07" not in _daily(world)
    await _at(world, datetime(2027, 11, 7, 5, 30, 30, tzinfo=UTC))  # 01:30:30 EDT
    assert _daily(world).count("2027-11-07") == 1
    assert len(_weekly(world)) == weekly + 1
    await _at(world, datetime(2027, 11, 7, 6, 30, 30, tzinfo=UTC))  # 01:30:30 EST, again
    await _restart_at(world, datetime(2027, 11, 7, 6, 31, tzinfo=UTC))
    assert _daily(world).count("2027-11-07") == 1
    assert len(_weekly(world)) == weekly + 1
    await _at(world, datetime(2027, 11, 8, 6, 30, 30, tzinfo=UTC))  # 01:30:30 EST Monday
    assert _daily(world)[-2:] == ["2027-11-07", "2027-11-08"]
