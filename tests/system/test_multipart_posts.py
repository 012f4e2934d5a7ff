"""A daily post of two messages whose second one keeps meeting 429s until discord.py gives up:
the post is finished on a later pass, and each of its messages appears in the channel once.

Before parts were recorded, the failed post was released whole and sent again, so its first
message appeared twice.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, time

import pytest
import pytest_asyncio

from fakediscord.messages import Message
from tests.bot.conftest import MONDAY, World, start_world
from tests.timeline import local

pytestmark = pytest.mark.asyncio(loop_scope="module")

SEND = "POST /channels/{channel_id}/messages"
#: discord.py tries a request five times on 429s, then raises
TRIES = 5
HEADING = f"Quest of the day · {MONDAY.date().isoformat()}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("parts"), workers=0, clock=True):
        started.set_time(local(MONDAY.date(), time(7, 0), UTC))  # before the 09:00 post
        setup = await started.fake.invoke_slash(
            started.guild,
            started.quests,
            started.owner,
            "admin setup",
            options={"channel": started.quests, "time": "09:00"},
        )
        assert "The daily quest goes to" in (await setup.original()).content
        yield started


def _daily_parts(world: World) -> list[Message]:
    """The messages of the daily post so far: every embed message that is not the weekly's."""
    return [
        m
        for m in world.fake.messages_in(world.quests)
        if m.embeds and not m.embeds[0].get("title", "").startswith("🏆 Week")
    ]


async def test_a_part_failing_five_times_is_sent_later_and_no_part_twice(world: World) -> None:
    await world.settle()
    assert _daily_parts(world) == []
    refused_before = len(world.fake.calls(SEND, status=429))
    # the post's first message goes through; every try of its second meets a 429
    world.fake.inject_fault(429, route=SEND, times=TRIES, after=1)
    world.set_time(local(MONDAY.date(), time(9, 0, 30), UTC))
    await world.fake.wait_for_message(
        world.quests, lambda _: len(_daily_parts(world)) >= 2, timeout=30
    )
    await world.settle()  # whole passes after the post: a repeated part would be in by now
    await world.settle()

    parts = _daily_parts(world)
    shown = [json.dumps(m.embeds, sort_keys=True) for m in parts]
    assert len(parts) == 2, [m.embeds[0].get("author") for m in parts]
    assert len(set(shown)) == 2, "a part of the post appeared twice"
    assert parts[0].embeds[0].get("author", {}).get("name") == HEADING
    assert all(e.get("author", {}).get("name") != HEADING for e in parts[1].embeds)
    assert len(world.fake.calls(SEND, status=429)) - refused_before == TRIES
    assert re.search(r"daily_quest \S+ not posted \(1 part\(s\) sent", world.bot.output)
    with sqlite3.connect(world.database) as db:
        status, message_id, sent = db.execute(
            "SELECT status, message_id, sent_message_ids FROM post_log WHERE kind = 'daily_quest'"
        ).fetchone()
    assert status == "posted"
    assert json.loads(sent) == [m.id for m in parts]
    assert message_id == parts[0].id
