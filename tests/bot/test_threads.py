"""Daily discussion threads under time control: one per daily post, and only when turned on.

The bot's clock starts at 08:00 UTC on ``conftest.MONDAY``; the server posts at 09:00 UTC.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import date, datetime, time, timedelta

import pytest
import pytest_asyncio

from bot.daily_threads import OPENER
from fakediscord import Permission
from fakediscord.entities import Thread
from tests.bot.conftest import MONDAY, World, start_world

pytestmark = pytest.mark.asyncio(loop_scope="module")

DAY = timedelta(days=1)
HEADING = "Quest of the day · "
START_THREAD = "POST /channels/{channel_id}/messages/{message_id}/threads"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("threads"), workers=0, clock=True):
        yield started


def _after_post(day: date) -> datetime:
    return datetime.combine(day, time(9, 0, 30), MONDAY.tzinfo)


def _daily_posts(world: World, day: date) -> list[int]:
    """The ids of the messages that open a daily post of ``day``."""
    return [
        message.id
        for message in world.fake.messages_in(world.quests)
        if message.embeds and message.embeds[0].get("author", {}).get("name") == HEADING + str(day)
    ]


def _bot_posts(world: World, thread: Thread) -> list[str]:
    return [m.content for m in world.fake.messages_in(thread) if m.author == world.fake.bot]


def _post_log(world: World, sql: str, day: date) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(world.database, timeout=10)) as db, db:
        return db.execute(
            sql + " WHERE kind = 'daily_quest' AND period = ?", (day.isoformat(),)
        ).fetchall()


async def test_a_daily_post_opens_one_thread_with_only_its_opener(world: World) -> None:
    monday = MONDAY.date()
    setup = await world.slash(world.owner, "admin setup", channel=world.quests, threads=True)
    assert "Each daily post opens a discussion thread." in (await setup.original()).content
    await world.at(_after_post(monday))
    (post_id,) = _daily_posts(world, monday)
    # Monday has the weekly post too: only the daily post gets a thread, on its first message.
    (thread,) = world.fake.threads_of(world.quests)
    assert thread.id == post_id
    title = world.fake.world.message(world.quests, post_id).embeds[0]["title"]
    assert thread.name == f"Day {monday.isoformat()} · {title}"
    assert _bot_posts(world, thread) == [OPENER]
    (details,) = _post_log(world, "SELECT details FROM post_log", monday)
    assert json.loads(details[0]) == {"thread_id": thread.id}


async def test_a_retry_or_a_restart_never_opens_a_second_thread(world: World) -> None:
    monday = MONDAY.date()
    (thread,) = world.fake.threads_of(world.quests)
    # As if the bot died after opening the thread but before marking the post posted: its
    # stale claim is taken over, Discord answers 160004, and that counts as done.
    _post_log(
        world,
        "UPDATE post_log SET status = 'pending', details = NULL, "
        "created_at = '2000' || substr(created_at, 5)",
        monday,
    )
    await world.settle()
    assert len(world.fake.calls(START_THREAD, status=400)) == 1  # 160004: it already exists
    assert _post_log(world, "SELECT status, details FROM post_log", monday) == [
        ("posted", json.dumps({"thread_id": thread.id}))
    ]
    await world.restart()
    assert world.fake.threads_of(world.quests) == [thread]
    assert _daily_posts(world, monday) == [thread.id]
    assert _bot_posts(world, thread) == [OPENER]


async def test_no_thread_when_refused_or_turned_off_and_the_post_stands(world: World) -> None:
    tuesday = MONDAY.date() + DAY
    before = world.fake.threads_of(world.quests)
    world.fake.deny_bot(world.quests, Permission.CREATE_PUBLIC_THREADS)
    await world.at(_after_post(tuesday))
    assert len(_daily_posts(world, tuesday)) == 1
    assert world.fake.threads_of(world.quests) == before
    assert f"no discussion thread for the daily post of {tuesday.isoformat()}" in world.bot.output
    await world.at(_after_post(tuesday) + timedelta(hours=1))
    assert len(_daily_posts(world, tuesday)) == 1  # the failed thread did not repeat the post

    world.fake.set_overwrite(world.quests, world.fake.bot)  # the permission is back
    setup = await world.slash(world.owner, "admin setup", threads=False)
    assert "Daily posts open no discussion thread." in (await setup.original()).content
    wednesday = tuesday + DAY
    await world.at(_after_post(wednesday))
    assert len(_daily_posts(world, wednesday)) == 1
    assert world.fake.threads_of(world.quests) == before
