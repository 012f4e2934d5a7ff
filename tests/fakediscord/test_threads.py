"""Public threads started from messages, through the real client, with Discord's rules."""

from __future__ import annotations

import asyncio

import discord
import pytest

from fakediscord import Permission
from fakediscord.messages import HAS_THREAD
from tests.fakediscord.conftest import Scene
from tests.fakediscord.sample_bot import SampleBot


def _text(bot: SampleBot, channel_id: int) -> discord.TextChannel:
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_a_thread_from_a_message_takes_its_id_and_holds_posts(
    scene: Scene, bot: SampleBot
) -> None:
    question = await _text(bot, scene.general.id).send("Why is matmul compute-bound?")
    created = asyncio.create_task(bot.wait_for("thread_create", timeout=5))
    thread = await question.create_thread(name="Discussion: matmul", reason="daily quest")
    assert thread.id == question.id and thread.parent_id == scene.general.id
    assert (await created).id == thread.id
    assert thread.guild.get_thread(thread.id) is not None

    (stored,) = scene.fake.threads_of(scene.general)
    assert (stored.name, stored.starter_message_id) == ("Discussion: matmul", question.id)
    (request,) = scene.fake.calls("POST /channels/{channel_id}/messages/{message_id}/threads")
    assert (request.status, request.reason) == (200, "daily quest")
    (starter,) = scene.fake.messages_in(scene.general)
    assert starter.thread is stored and starter.flags & HAS_THREAD

    await thread.send("Because of its arithmetic intensity.")
    await scene.fake.post_as(scene.alice, stored, "thanks!")
    posts = [m.content for m in scene.fake.messages_in(stored)]
    assert posts == ["Because of its arithmetic intensity.", "thanks!"]
    assert stored.message_count == 2
    assert [m.content for m in scene.fake.messages_in(scene.general)] == [question.content]

    with pytest.raises(discord.HTTPException) as again:
        await question.create_thread(name="again")
    assert (again.value.status, again.value.code) == (400, 160004)


async def test_thread_names_over_100_characters_are_refused(scene: Scene, bot: SampleBot) -> None:
    message = await _text(bot, scene.general.id).send("topic")
    with pytest.raises(discord.HTTPException) as refused:
        await message.create_thread(name="x" * 101)
    assert refused.value.code == 50035
    assert "In name: Must be 100 or fewer in length." in refused.value.text
    assert scene.fake.threads_of(scene.general) == []


async def test_threads_have_permissions_of_their_own(scene: Scene, bot: SampleBot) -> None:
    # In #quiet the bot may not send messages, yet it may start threads and post in them.
    mine = await scene.fake.post_as(scene.alice, scene.quiet, "a question")
    quiet = _text(bot, scene.quiet.id)
    thread = await quiet.get_partial_message(mine.id).create_thread(name="answers")
    await thread.send("an answer")
    with pytest.raises(discord.Forbidden):
        await quiet.send("not here")

    scene.fake.deny_bot(scene.quiet, Permission.SEND_MESSAGES | Permission.SEND_MESSAGES_IN_THREADS)
    with pytest.raises(discord.Forbidden) as refused:
        await thread.send("no longer")
    assert refused.value.code == 50013

    other = await scene.fake.post_as(scene.alice, scene.quiet, "another")
    scene.fake.deny_bot(scene.quiet, Permission.CREATE_PUBLIC_THREADS)
    with pytest.raises(discord.Forbidden) as refused:
        await quiet.get_partial_message(other.id).create_thread(name="more")
    assert refused.value.code == 50013
    assert [t.name for t in scene.fake.threads_of(scene.quiet)] == ["answers"]
    assert [m.content for m in scene.fake.messages_in(thread.id)] == ["an answer"]
