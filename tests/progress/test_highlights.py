"""The weekly post's data: the week's top, level-ups and the longest current streaks."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest

from bot.progress.highlights import WeeklyHighlights, weekly_highlights
from bot.progress.periods import month_of, week_of
from tests.progress.world import BERLIN, GUILD_ID, World

WEEK = week_of(date(2026, 11, 23), BERLIN)  # 2026-W48, Monday 23 to Monday 30 November
MONDAY = datetime(2026, 11, 23, 0, 0, tzinfo=BERLIN)
POST_TIME = datetime(2026, 11, 30, 9, 0, tzinfo=BERLIN)  # the next Monday's post


async def highlights(world: World, now: datetime = POST_TIME) -> WeeklyHighlights:
    async with world.sessions() as session:
        return await weekly_highlights(session, guild_id=GUILD_ID, week=WEEK, tz=BERLIN, now=now)


async def test_top_of_the_week_in_leaderboard_order(world: World) -> None:
    members = [await world.member(user_id) for user_id in range(1, 14)]
    for n, member in enumerate(members):
        await world.verdict(member, MONDAY + timedelta(hours=n), xp=10 + 5 * (n % 4))
    await world.verdict(members[0], MONDAY - timedelta(minutes=1), task="q0/old", xp=500)
    result = await highlights(world)
    assert result.week_key == "2026-W48"
    assert len(result.top) == 10
    assert [e.rank for e in result.top] == list(range(1, 11))
    assert [s.xp for s in result.top] == [25, 25, 25, 20, 20, 20, 15, 15, 15, 10]
    assert [s.member_id for s in result.top[:3]] == [members[3], members[7], members[11]]
    assert result.top[0].display_name == "user4"


async def test_level_ups_during_the_week(world: World) -> None:
    ada, bob, cyd = [await world.member(user_id) for user_id in (1, 2, 3)]
    await world.verdict(ada, MONDAY - timedelta(days=1), task="q1/a", xp=40)
    await world.verdict(ada, MONDAY + timedelta(days=1), task="q1/b", xp=120)  # 40 -> 160
    await world.verdict(bob, MONDAY + timedelta(days=2), task="q1/a", xp=20)  # stays level 1
    await world.verdict(cyd, MONDAY + timedelta(days=8), task="q1/a", xp=60)  # next week
    result = await highlights(world, now=MONDAY + timedelta(days=9))
    assert [(u.member_id, u.old_level, u.new_level) for u in result.level_ups] == [(ada, 1, 3)]
    assert result.level_ups[0].display_name == "user1"


async def test_longest_current_streaks(world: World) -> None:
    ada, bob, cyd, dan = [await world.member(user_id) for user_id in (1, 2, 3, 4)]
    for day in range(5):  # five days up to Sunday
        await world.verdict(ada, MONDAY + timedelta(days=2 + day, hours=20), task=f"a/{day}")
    for day in range(3):  # three days up to Monday morning
        await world.done(bob, MONDAY + timedelta(days=5 + day, hours=8), f"b/{day}")
    for day in range(4):  # four days, but broken off on Friday
        await world.done(cyd, MONDAY + timedelta(days=1 + day, hours=8), f"c/{day}")
    await world.done(dan, MONDAY + timedelta(days=7, hours=8), "d/0")  # one day only
    result = await highlights(world)
    assert [(s.member_id, s.days) for s in result.streaks] == [(ada, 5), (bob, 3)]
    assert result.streaks[1].display_name == "user2"


async def test_highlights_need_a_week(world: World) -> None:
    async with world.sessions() as session:
        with pytest.raises(ValueError, match="need a week"):
            await weekly_highlights(
                session,
                guild_id=GUILD_ID,
                week=month_of(date(2026, 11, 1), BERLIN),
                tz=BERLIN,
                now=POST_TIME,
            )
