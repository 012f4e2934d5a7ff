"""Message context-menu commands, members' own messages, and the Message Content intent."""

from __future__ import annotations

from typing import Any

import aiohttp
import discord
import pytest

from fakediscord import FakeDiscord
from tests.fakediscord.conftest import Scene
from tests.fakediscord.sample_bot import SampleBot

SUBMIT = "Submit solution"
CONTEXT_MENU_COMMAND = 23


async def test_a_message_command_hands_the_bot_the_whole_target(
    scene: Scene, bot: SampleBot
) -> None:
    (registered,) = [c for c in scene.fake.commands(scene.guild) if c.kind == 3]
    assert registered.name == SUBMIT and registered.payload()["description"] == ""
    post = await scene.fake.post_as(
        scene.alice, scene.general, "my matmul", attachments=[("matmul.py", b"A @ B")]
    )
    handle = await scene.fake.invoke_message_command(
        scene.guild, scene.general, scene.bob, SUBMIT, target=post
    )
    reply = await handle.original()
    # The sample bot asks for GUILDS only: no Message Content, yet the target arrives whole.
    assert reply.content == "alice wrote 'my matmul' with ['matmul.py=A @ B']"
    assert reply.ephemeral and reply.kind == CONTEXT_MENU_COMMAND
    data = handle.record.payload["data"]
    assert (data["type"], data["target_id"]) == (3, str(post.id))
    assert data["resolved"]["messages"][str(post.id)]["content"] == "my matmul"


async def test_the_client_refuses_impossible_message_commands(scene: Scene, bot: SampleBot) -> None:
    post = await scene.fake.post_as(scene.alice, scene.general, "hello")
    with pytest.raises(LookupError):
        await scene.fake.invoke_message_command(
            scene.guild, scene.general, scene.bob, "Not registered", target=post
        )
    with pytest.raises(ValueError, match="not in #quiet"):
        await scene.fake.invoke_message_command(
            scene.guild, scene.quiet, scene.bob, SUBMIT, target=post
        )
    with pytest.raises(ValueError, match="upload limit"):
        await scene.fake.post_as(scene.alice, scene.general, attachments=[("big", b"0" * 2**24)])
    with pytest.raises(ValueError, match="empty"):
        await scene.fake.post_as(scene.alice, scene.general)


@pytest.mark.parametrize(
    ("command", "field"),
    [
        ({"name": "x" * 33, "type": 3}, "name"),
        ({"name": " padded", "type": 3}, "name"),
        ({"name": "Submit", "type": 3, "description": "no"}, "description"),
        ({"name": "Submit", "type": 2, "options": [{"name": "a", "type": 3}]}, "options"),
        ({"name": "Submit solution", "description": "a slash name has no spaces"}, "name"),
        ({"name": "Menu", "type": 7}, "type"),
    ],
)
async def test_context_menu_commands_are_validated_like_discord(
    scene: Scene, command: dict[str, Any], field: str
) -> None:
    status, body = await _sync(scene.fake, [command])
    assert (status, body["code"]) == (400, 50035)
    assert field in body["errors"]["0"]


async def test_at_most_15_message_commands_per_scope(scene: Scene) -> None:
    menus = [{"name": f"Menu {n}", "type": 3} for n in range(16)]
    status, body = await _sync(scene.fake, menus[:15])
    assert status == 200 and [c["name"] for c in body] == [m["name"] for m in menus[:15]]
    status, body = await _sync(scene.fake, menus)
    assert (status, body["code"]) == (400, 50035)


async def _sync(fake: FakeDiscord, commands: list[dict[str, Any]]) -> tuple[int, Any]:
    assert fake.urls is not None
    url = f"{fake.urls.api}/applications/{fake.application_id}/commands"
    headers = {"Authorization": f"Bot {fake.token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.put(url, json=commands, headers=headers) as response,
    ):
        return response.status, await response.json()


async def test_without_the_intent_reads_withhold_others_content(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeDiscord(privileged_intents=0)
    guild = fake.add_guild("no content")
    room = fake.add_channel(guild, "room")
    alice = fake.add_user("alice")
    fake.add_member(guild, alice)
    async with fake:
        assert fake.urls is not None
        monkeypatch.setattr(discord.http.Route, "BASE", fake.urls.api)
        plain = await fake.post_as(alice, room, "secret", attachments=[("a.py", b"x")])
        ping = await fake.post_as(alice, room, f"<@{fake.bot.id}> hello")
        client = discord.Client(intents=discord.Intents.none())
        await client.login(fake.token)
        try:
            channel = await client.fetch_channel(room.id)
            assert isinstance(channel, discord.TextChannel)
            own = await channel.send("mine")
            withheld = await channel.fetch_message(plain.id)
            assert (withheld.content, withheld.attachments) == ("", [])
            assert (await channel.fetch_message(ping.id)).content == ping.content
            history = [m.content async for m in channel.history(limit=5)]
            assert history == [own.content, ping.content, ""]
        finally:
            await client.close()
