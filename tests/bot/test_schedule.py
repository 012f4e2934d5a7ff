"""Daily and weekly posts under time control: once per period, catch-up, restarts, DST."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import pytest_asyncio

from tests.bot.conftest import World, start_world
from tests.bot.test_learner_commands import _text
from tests.fakediscord import User

pytestmark = pytest.mark.asyncio(loop_scope="module")

SETTLE_S = 1.5  # a few schedule ticks (0.2 s each under test)


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


async def _at(world: World, moment: datetime) -> None:
    world.set_time(moment)
    await asyncio.sleep(SETTLE_S)


async def test_posts_once_per_day_at_local_time_with_one_catch_up(world: World) -> None:
    await _at(world, datetime(2026, 11, 30, 7, 30, tzinfo=UTC))  # 08:30 in Berlin
    setup = await world.slash(
        world.owner, "admin setup", channel=world.quests, time="09:00", timezone="Europe/Berlin"
    )
    assert "09:00 (Europe/Berlin)" in (await setup.original()).content
    await asyncio.sleep(SETTLE_S)
    assert _daily(world) == []  # 08:30 local: not yet

    await _at(world, datetime(2026, 11, 30, 8, 0, 30, tzinfo=UTC))  # 09:00:30 CET
    assert _daily(world) == ["2026-11-30"]
    assert len(_weekly(world)) == 1  # Monday: the weekly post, at the same time
    await _at(world, datetime(2026, 11, 30, 12, 0, tzinfo=UTC))
    assert _daily(world) == ["2026-11-30"]

    await _at(world, datetime(2026, 12, 1, 8, 0, 30, tzinfo=UTC))
    assert _daily(world) == ["2026-11-30", "2026-12-01"]

    # Four days of downtime (the clock jumps): one catch-up post, not four.
    await _at(world, datetime(2026, 12, 5, 9, 30, tzinfo=UTC))
    assert _daily(world) == ["2026-11-30", "2026-12-01", "2026-12-05"]
    assert len(_weekly(world)) == 1


async def test_restart_at_the_post_time_does_not_post_again(world: World) -> None:
    before = _daily(world)
    await world.bot.stop()
    await world.bot.start()
    await world.fake.wait_until_connected(timeout=30)
    await asyncio.sleep(SETTLE_S + 2)  # on_ready comes ~2 s after the last GUILD_CREATE
    assert _daily(world) == before


async def test_spring_forward_in_berlin_moves_the_post_an_hour_earlier_in_utc(
    world: World,
) -> None:
    await _at(world, datetime(2027, 3, 28, 6, 59, 30, tzinfo=UTC))  # 08:59:30 CEST
    assert "2027-03-28" not in _daily(world)
    await _at(world, datetime(2027, 3, 28, 7, 0, 30, tzinfo=UTC))  # 09:00:30 CEST
    assert _daily(world)[-1] == "2027-03-28"
    assert _daily(world).count("2027-03-28") == 1
    assert "Go Brrrr" in _text(world.fake.messages_in(world.quests)[-2])  # two messages per quest


async def _done(world: World, learner: User, task: str) -> str:
    handle = await world.slash(learner, "done", task=task)
    return (await handle.original(timeout=10)).content


async def test_streak_across_local_midnight_and_a_dst_change(world: World) -> None:
    learner = world.learner()
    # Saturday 2027-03-27 23:30 in Berlin (CET, UTC+1)
    world.set_time(datetime(2027, 3, 27, 22, 30, tzinfo=UTC))
    first = await _done(world, learner, "go-brrrr/zero-to-hero")
    assert "+20 XP" in first and "streak" not in first
    # One hour later it is Sunday 00:30 local, the day clocks go forward: day 2 of the streak.
    world.set_time(datetime(2027, 3, 27, 23, 30, tzinfo=UTC))
    second = await _done(world, learner, "go-brrrr/matrix-drill")
    assert "+10 XP" in second and "+5 XP streak bonus (day 2)" in second
    profile = await world.slash(learner, "profile")
    card = await profile.wait_for(lambda m: bool(m.attachments), timeout=15)
    assert "Streak: 2 days (best 2)" in card.content
