"""Daily and weekly posts under time control: once per period, catch-up, restarts, DST.

Every moment is relative to the real now (``conftest.MONDAY`` and the zone's next clock change),
so the module tests the same things whatever day it runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date, time, timedelta
from typing import Any

import pytest
import pytest_asyncio

from bot.content import load_content
from bot.curriculum.guild_map import GuildMap
from fakediscord import User
from tests.bot.conftest import MONDAY, World, start_world
from tests.support import SEED_QUESTS
from tests.timeline import BERLIN, local, local_day, transition

pytestmark = pytest.mark.asyncio(loop_scope="module")

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
#: the first Sunday clocks go forward in Berlin after this module's first week
SPRING = transition(BERLIN, MONDAY + 7 * DAY, forward=True)
SPRING_DAY = local_day(SPRING, BERLIN)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("clock"), workers=0, clock=True):
        yield started


def _daily(world: World) -> list[str]:
    """The local dates of the daily posts so far, in order."""
    dates = []
    for message in world.fake.messages_in(world.quests):
        for embed in message.embeds:
            name = embed.get("author", {}).get("name", "")
            if name.startswith("Quest of the day · "):
                dates.append(name.removeprefix("Quest of the day · "))
    return dates


def _weekly(world: World) -> list[str]:
    return [
        m.embeds[0]["title"]
        for m in world.fake.messages_in(world.quests)
        if m.embeds and m.embeds[0].get("title", "").startswith("🏆 Week")
    ]


def _daily_embed(world: World, day: date) -> dict[str, Any]:
    """The embed that opens the daily post of ``day``."""
    heading = f"Quest of the day · {day.isoformat()}"
    for message in world.fake.messages_in(world.quests):
        for embed in message.embeds:
            if embed.get("author", {}).get("name") == heading:
                return embed
    raise AssertionError(f"no daily post for {day}")


def _quest_title(start: date, day: date) -> str:
    """The seed map's quest for ``day`` of a schedule that began on ``start``."""
    content = load_content(SEED_QUESTS)
    quest = GuildMap(quests=content.quests, phase_titles={}).quest_on(start, day)
    assert quest is not None
    return quest.title


async def test_posts_once_per_day_at_local_time_with_one_catch_up(world: World) -> None:
    monday = MONDAY.date()
    await world.at(local(monday, time(8, 30), BERLIN))
    setup = await world.slash(
        world.owner, "admin setup", channel=world.quests, time="09:00", timezone="Europe/Berlin"
    )
    assert "09:00 (Europe/Berlin)" in (await setup.original()).content
    await world.settle()
    assert _daily(world) == []  # 08:30 local: not yet

    await world.at(local(monday, time(9, 0, 30), BERLIN))
    assert _daily(world) == [monday.isoformat()]
    assert len(_weekly(world)) == 1  # Monday: the weekly post, at the same time
    await world.at(local(monday, time(13, 0), BERLIN))
    assert _daily(world) == [monday.isoformat()]

    tuesday = monday + DAY
    await world.at(local(tuesday, time(9, 0, 30), BERLIN))
    assert _daily(world) == [monday.isoformat(), tuesday.isoformat()]

    # Four days of downtime (the clock jumps): one catch-up post, not four.
    saturday = monday + 5 * DAY
    await world.at(local(saturday, time(10, 30), BERLIN))
    assert _daily(world) == [monday.isoformat(), tuesday.isoformat(), saturday.isoformat()]
    assert len(_weekly(world)) == 1


async def test_restart_at_the_post_time_does_not_post_again(world: World) -> None:
    before = _daily(world)
    await world.restart()
    assert _daily(world) == before


async def test_spring_forward_in_berlin_moves_the_post_an_hour_earlier_in_utc(
    world: World,
) -> None:
    # 09:00 local comes 23 hours after the day before's: an hour earlier in UTC.
    nine = time(9, 0)
    assert local(SPRING_DAY, nine, BERLIN) - local(SPRING_DAY - DAY, nine, BERLIN) == 23 * HOUR
    await world.at(local(SPRING_DAY, time(8, 59, 30), BERLIN))
    assert SPRING_DAY.isoformat() not in _daily(world)
    await world.at(local(SPRING_DAY, time(9, 0, 30), BERLIN))
    assert _daily(world)[-1] == SPRING_DAY.isoformat()
    assert _daily(world).count(SPRING_DAY.isoformat()) == 1
    # The quest the map walk gives that day (counted from the setup day) opens the post.
    opening = _daily_embed(world, SPRING_DAY)
    assert opening["title"] == _quest_title(MONDAY.date(), SPRING_DAY)


async def _done(world: World, learner: User, task: str) -> str:
    handle = await world.slash(learner, "done", task=task)
    return (await handle.original(timeout=10)).content


async def test_streak_across_local_midnight_and_a_dst_change(world: World) -> None:
    learner = world.learner()
    # Saturday 23:30 in Berlin (CET, UTC+1), the night the clocks go forward
    world.set_time(local(SPRING_DAY - DAY, time(23, 30), BERLIN))
    first = await _done(world, learner, "go-brrrr/zero-to-hero")
    assert "+20 XP" in first and "streak" not in first
    # One hour later it is Sunday 00:30 local, the day clocks go forward: day 2 of the streak.
    world.set_time(local(SPRING_DAY, time(0, 30), BERLIN))
    second = await _done(world, learner, "go-brrrr/matrix-drill")
    assert "+10 XP" in second and "+5 XP streak bonus (day 2)" in second
    profile = await world.slash(learner, "profile")
    card = await profile.wait_for(lambda m: bool(m.attachments), timeout=15)
    assert "Streak: 2 days (best 2)" in card.content
