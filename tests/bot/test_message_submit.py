"""The "Submit solution" message command through the real bot, the fake and a real worker.

A member's own message (a ```python block or a .py file) ends up where ``/submit`` ends: the
same verdict, XP and ledger row.  The daily discussion thread stays free of verdicts.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import pytest

from bot.daily_threads import OPENER
from fakediscord import InteractionHandle, Message, User
from tests.bot.conftest import CORRECT, World
from tests.support import BUILD_TASK

pytestmark = pytest.mark.asyncio(loop_scope="module")

SUBMIT = "Submit solution"
CODE = CORRECT.decode()


def _select(message: Message) -> dict[str, Any]:
    """The one select menu (component type 3) of ``message``."""
    found = [
        component
        for row in message.components
        for component in row.get("components", [])
        if component.get("type") == 3
    ]
    assert len(found) == 1, message.components
    return found[0]


def _rows(world: World, user: User, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(world.database)) as db:
        return db.execute(
            sql + " JOIN members ON members.id = member_id WHERE members.user_id = ?", (user.id,)
        ).fetchall()


def _statuses(world: World, user: User) -> list[str]:
    return [s for (s,) in _rows(world, user, "SELECT submissions.status FROM submissions")]


def _ledger(world: World, user: User) -> list[tuple[str, int]]:
    return _rows(world, user, "SELECT xp_ledger.source, xp_ledger.amount FROM xp_ledger")  # type: ignore[return-value]


async def _submit_message(world: World, user: User, message: Message) -> InteractionHandle:
    channel = world.fake.world.channel(message.channel_id)
    return await world.fake.invoke_message_command(
        world.guild, channel, user, SUBMIT, target=message
    )


async def _menu(handle: InteractionHandle) -> Message:
    """The bot's answer to "Submit solution" once it offers the task select."""
    return await handle.wait_for(lambda m: bool(m.components), timeout=15)


async def _pick(world: World, menu: Message, task: str) -> InteractionHandle:
    """The member picks ``task`` in the bot's task select ``menu``."""
    return await world.fake.select(menu, _select(menu)["custom_id"], [task])


async def _passed(handle: InteractionHandle) -> Message:
    verdict = await handle.wait_for(lambda m: m.content.startswith("Passed"), timeout=60)
    assert verdict.ephemeral
    return verdict


async def test_a_python_block_in_the_daily_thread_is_graded_like_submit(world: World) -> None:
    setup = await world.slash(world.owner, "admin setup", channel=world.quests, threads=True)
    assert "opens a discussion thread" in (await setup.original()).content
    posted = await world.slash(world.owner, "admin post-quest")
    post_id = int((await posted.original(timeout=15)).content.rsplit("/", 1)[1])
    (thread,) = [t for t in world.fake.threads_of(world.quests) if t.id == post_id]
    opening = world.fake.world.message(world.quests, post_id).embeds[0]
    day = opening["author"]["name"].removeprefix("Quest of the day · ")
    assert thread.name == f"Day {day} · {opening['title']}"

    learner = world.learner()
    message = await world.fake.post_as(learner, thread, f"my matmul:\n```python\n{CODE}```")
    menu_handle = await _submit_message(world, learner, message)
    assert await menu_handle.acked() < 3
    menu = await _menu(menu_handle)
    assert menu.ephemeral and "code block of your message" in menu.content
    first = _select(menu)["options"][0]
    assert first["value"] == BUILD_TASK and "today's quest" in first["description"]
    assert _statuses(world, learner) == []  # nothing is queued before the task is chosen

    verdict = await _passed(await _pick(world, menu, BUILD_TASK))
    assert "+60 XP" in verdict.content
    assert _statuses(world, learner) == ["passed"]
    assert _ledger(world, learner) == [("task", 60)]
    # Verdicts stay private: even the last-resort notice (DMs closed, token expired) would go
    # to the thread's channel, and all the bot ever posted in the thread is its opener.
    notice_channels = _rows(world, learner, "SELECT submissions.reply_channel_id FROM submissions")
    assert notice_channels == [(world.quests.id,)]
    bot_posts = [m.content for m in world.fake.messages_in(thread) if m.author == world.fake.bot]
    assert bot_posts == [OPENER]


async def test_an_attached_py_file_is_submitted_and_a_stale_choice_expires(
    world: World,
) -> None:
    learner = world.learner()
    message = await world.fake.post_as(
        learner, world.quests, "here it is", attachments=[("matmul.py", CORRECT)]
    )
    stale = await _menu(await _submit_message(world, learner, message))
    menu = await _menu(await _submit_message(world, learner, message))
    assert "`matmul.py`" in menu.content
    # A newer run replaces the held code (as a restart loses it): the old select says so.
    expired = await (await _pick(world, stale, BUILD_TASK)).wait_for(lambda m: not m.components)
    assert expired.content == "This choice expired: run Submit solution again on your message."
    assert _statuses(world, learner) == []
    verdict = await _passed(await _pick(world, menu, BUILD_TASK))
    assert "+60 XP" in verdict.content
    assert _ledger(world, learner) == [("task", 60)]


async def test_another_members_message_is_refused_and_nothing_is_queued(world: World) -> None:
    author, other = world.learner(), world.learner()
    message = await world.fake.post_as(author, world.quests, f"```python\n{CODE}```")
    handle = await _submit_message(world, other, message)
    reply = await handle.original()
    assert reply.ephemeral and not reply.components
    assert reply.content.startswith("You can only submit your own message.")
    assert _statuses(world, other) == [] and _statuses(world, author) == []


async def test_a_message_without_code_is_refused_clearly(world: World) -> None:
    learner = world.learner()
    message = await world.fake.post_as(learner, world.quests, "I think the answer is 42")
    reply = await (await _submit_message(world, learner, message)).original()
    assert reply.ephemeral and not reply.components
    assert reply.content.startswith(
        "That message has no .py or .ipynb file and no ```python code block."
    )
    assert _statuses(world, learner) == []
