"""A member's profile numbers."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.progress.profile import Profile, profile
from bot.progress.streaks import Streak
from tests.progress.world import BERLIN, GUILD_ID, World

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=BERLIN)  # Wednesday of 2026-W48
QUESTS = {
    "q1": ["q1/build", "q1/read"],
    "q2": ["q2/build", "q2/quiz"],
    "empty": [],
}


async def load(world: World, member_id: int) -> Profile:
    async with world.sessions() as session:
        return await profile(
            session,
            guild_id=GUILD_ID,
            member_id=member_id,
            tz=BERLIN,
            now=NOW,
            content_task_refs_by_quest=QUESTS,
        )


async def test_profile_numbers(world: World) -> None:
    ada, bob = await world.member(1), await world.member(2)
    await world.verdict(bob, NOW - timedelta(days=20), xp=500)
    await world.verdict(ada, NOW - timedelta(days=10), task="q1/build", xp=100)  # last week
    await world.verdict(ada, NOW - timedelta(days=2), task="q2/build", xp=60)  # Monday
    await world.done(ada, NOW - timedelta(days=1), "q1/read", xp=20)  # Tuesday
    await world.verdict(ada, NOW, task="q2/quiz", xp=40, score=0.4, status="failed")
    ada_profile = await load(world, ada)
    assert ada_profile.total_xp == 100 + 60 + 20 + 5  # a day-2 streak bonus on Tuesday
    assert (ada_profile.level.level, ada_profile.level.into, ada_profile.level.to_next) == (
        3,
        35,
        115,
    )
    assert ada_profile.rank == 2
    assert ada_profile.week_xp == 85
    assert ada_profile.streak == Streak(current=2, best=2)
    assert ada_profile.completed_tasks == ("q1/build", "q1/read", "q2/build")
    assert ada_profile.completed_quests == ("q1",)


async def test_profile_of_a_newcomer(world: World) -> None:
    new = await load(world, await world.member(1))
    assert (new.total_xp, new.level.level, new.rank, new.week_xp) == (0, 1, None, 0)
    assert (new.streak, new.completed_tasks, new.completed_quests) == (Streak(0, 0), (), ())


async def test_a_quest_is_completed_when_all_its_tasks_paid(world: World) -> None:
    ada = await world.member(1)
    await world.verdict(ada, NOW, task="q2/build")
    await world.verdict(ada, NOW, task="q2/quiz", xp=40, score=0.75)  # partial credit counts
    assert (await load(world, ada)).completed_quests == ("q2",)
