"""Selects and buttons: ephemeral selects, clicks after a restart, and clicks nobody answers."""

from __future__ import annotations

import asyncio

import pytest

from fakediscord import Reply
from fakediscord.interaction_rules import RESPONSE_DEADLINE
from tests.fakediscord.conftest import Scene, running_bot
from tests.fakediscord.sample_bot import SampleBot


async def test_a_select_in_an_ephemeral_message_carries_its_values(
    scene: Scene, bot: SampleBot
) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "pick")
    menu = await handle.original()
    assert menu.ephemeral and menu.components[0]["components"][0]["type"] == 3
    with pytest.raises(ValueError, match="only the user"):
        await scene.fake.select(menu, "pick:topic", ["matmul"], user=scene.bob)
    choice = await scene.fake.select(menu, "pick:topic", ["matmul", "tiling"])
    assert choice.record.payload["data"]["values"] == ["matmul", "tiling"]
    assert await choice.acked() < 3 and choice.response_type is Reply.UPDATE_MESSAGE
    assert menu.content == "picked matmul, tiling"
    assert scene.fake.messages_in(scene.general) == []


async def test_persistent_buttons_answer_after_a_restart_and_others_go_unanswered(
    scene: Scene, bot: SampleBot
) -> None:
    persistent = await (
        await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "persist")
    ).original()
    poll = await (
        await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "vote")
    ).original()
    first = scene.fake.gateway.session
    await bot.close()

    async with running_bot(scene.fake, scene.guild, replacing=first) as restarted:
        kept = await scene.fake.click_button(persistent, "persist:ok", user=scene.bob)
        assert (await kept.original()).content == "still here"
        counted = await scene.fake.click_button(persistent, "count:41", user=scene.bob)
        assert (await counted.original()).content == "count 42"

        # Its silence must be a choice, not a lag: wait until the bot has the interaction.
        seen = asyncio.create_task(restarted.wait_for("interaction", timeout=5))
        orphan = await scene.fake.click_button(poll, "vote:yes")
        assert (await seen).id == orphan.id
        # The user's client shows "This interaction failed" when the 3 s pass unanswered.
        scene.fake.clock.advance(RESPONSE_DEADLINE - 0.3)
        await orphan.unanswered()
        assert orphan.response_type is None and orphan.record.expired
        assert poll.content == "vote?"
