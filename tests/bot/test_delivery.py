"""Verdicts that outlive the interaction token, per-member limits, and a torch-free bot."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.bot.conftest import World, start_world

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    # The bot's clock is set hours past real time, so every interaction token the fake issues
    # looks expired to the bot: verdicts must go by DM or to the channel.
    env = {"SUBMISSIONS_PER_HOUR": "2"}
    tmp = tmp_path_factory.mktemp("delivery")
    async for started in start_world(tmp, workers=1, clock=True, extra_env=env):
        setup = await started.slash(
            started.owner, "admin setup", channel=started.quests, time="23:59"
        )
        await setup.original()
        yield started


async def test_late_verdict_goes_by_dm(world: World) -> None:
    learner = world.learner()
    assert (await world.submit_reply(learner)).startswith("Queued")
    dm = await world.fake.wait_for_dm(learner, lambda m: m.content.startswith("Passed"), 60)
    assert "+60 XP" in dm.content and dm.embeds


async def test_closed_dms_fall_back_to_the_channel_without_details(world: World) -> None:
    learner = world.learner(dms_open=False)
    await world.submit_reply(learner)
    posted = await world.fake.wait_for_message(
        world.quests, lambda m: m.content.startswith(f"<@{learner.id}> Passed"), 60
    )
    assert "/submissions" in posted.content
    assert not posted.embeds  # feedback can quote code: never shown to others
    assert posted.pings.users == {learner.id} and not posted.pings.everyone


async def test_one_in_flight_and_hourly_limit(world: World) -> None:
    learner = world.learner()
    await world.submit_reply(learner)
    second = await world.submit_reply(learner)
    assert "still being graded" in second
    await world.fake.wait_for_dm(learner, lambda m: m.content.startswith("Passed"), 60)
    assert (await world.submit_reply(learner)).startswith("Queued")
    await world.fake.wait_for_dm(
        learner, lambda m: "#" in m.content and len(world.fake.dms_to(learner)) >= 2, 60
    )
    third = await world.submit_reply(learner)
    assert "in the last hour (the limit is 2)" in third


async def test_the_bot_process_never_loads_torch(world: World) -> None:
    maps = Path(f"/proc/{world.bot.pid}/maps").read_text()
    assert "libtorch" not in maps and "torch/_C" not in maps


async def test_regrade_follows_the_better_verdict_and_pays_once(world: World) -> None:
    learner = world.learner()
    await world.submit_reply(learner)
    await world.fake.wait_for_dm(learner, lambda m: m.content.startswith("Passed"), 60)
    with sqlite3.connect(world.database) as db:
        (submission_id,) = db.execute(
            "SELECT submissions.id FROM submissions JOIN members ON members.id = member_id "
            "WHERE members.user_id = ?",
            (learner.id,),
        ).fetchone()
    handle = await world.slash(world.owner, "admin regrade", submission=submission_id)
    assert "queued for grading again" in (await handle.original()).content
    await world.fake.wait_for_dm(
        learner, lambda m: m.content.startswith("Passed") and "+60 XP" not in m.content, 60
    )
    with sqlite3.connect(world.database) as db:
        total = db.execute(
            "SELECT SUM(amount) FROM xp_ledger JOIN members ON members.id = member_id "
            "WHERE members.user_id = ?",
            (learner.id,),
        ).fetchone()[0]
        audit = db.execute("SELECT action FROM audit_log WHERE action = 'regrade'").fetchall()
    assert total == 60 and audit


async def test_setup_names_missing_channel_permissions(world: World) -> None:
    handle = await world.slash(world.owner, "admin setup", channel=world.closed)
    reply = (await handle.original()).content
    assert "I cannot post in" in reply and "Send Messages" in reply
