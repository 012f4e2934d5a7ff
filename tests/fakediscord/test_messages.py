"""Channel messages through the real client: send, upload, edit, fetch, delete, DMs, limits."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import aiohttp
import discord
import pytest

from fakediscord import FakeDiscord
from fakediscord.launch import overrides
from fakediscord.ratelimits import RateLimitPolicy
from tests.fakediscord.conftest import Scene
from tests.fakediscord.sample_bot import SampleBot

SEND = "POST /channels/{channel_id}/messages"


def _general(bot: SampleBot, scene: Scene) -> discord.TextChannel:
    channel = bot.get_channel(scene.general.id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_send_edit_fetch_and_delete(scene: Scene, bot: SampleBot) -> None:
    channel = _general(bot, scene)
    sent = await channel.send("draft", file=discord.File(io.BytesIO(b"x = 1"), "a.py"))
    (stored,) = scene.fake.messages_in(scene.general)
    assert stored.attachments[0].data == b"x = 1"
    assert stored.attachments[0].content_type == "text/x-python"
    edited = await sent.edit(content="final", attachments=[])
    assert edited.content == "final" and stored.attachments == [] and stored.edits == 1
    fetched = await channel.fetch_message(sent.id)
    assert fetched.content == "final" and fetched.edited_at is not None
    history = [m.content async for m in channel.history(limit=10)]
    assert history == ["final"]
    await fetched.delete()
    assert scene.fake.messages_in(scene.general) == []
    with pytest.raises(discord.NotFound) as missing:
        await channel.fetch_message(sent.id)
    assert missing.value.code == 10008


async def test_over_long_content_and_embeds_are_refused_with_50035(
    scene: Scene, bot: SampleBot
) -> None:
    channel = _general(bot, scene)
    with pytest.raises(discord.HTTPException) as refused:
        await channel.send("x" * 2001)
    assert refused.value.code == 50035
    assert "In content: Must be 2000 or fewer in length." in refused.value.text
    big = [discord.Embed(description="d" * 4000) for _ in range(2)]
    with pytest.raises(discord.HTTPException) as refused:
        await channel.send(embeds=big)
    assert "Embed size exceeds maximum size of 6000" in refused.value.text
    assert scene.fake.messages_in(scene.general) == []


@pytest.mark.parametrize(
    ("embeds", "path"),
    [
        ([{"title": "t"}] * 11, "embeds"),
        ([{"fields": [{"name": "n", "value": "v"}] * 26}], "fields"),
        ([{"fields": [{"name": "n" * 257, "value": "v"}]}], "name"),
        ([{"fields": [{"name": "n", "value": "v" * 1025}]}], "value"),
        ([{"footer": {"text": "f" * 2049}}], "footer"),
        ([{"author": {"name": "a" * 257}}], "author"),
        ([{"description": "d" * 4097}], "description"),
    ],
)
async def test_each_embed_limit_is_enforced(
    scene: Scene, embeds: list[dict[str, Any]], path: str
) -> None:
    assert scene.fake.urls is not None
    url = f"{scene.fake.urls.api}/channels/{scene.general.id}/messages"
    headers = {"Authorization": f"Bot {scene.fake.token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json={"embeds": embeds}, headers=headers) as response,
    ):
        body = await response.json()
    assert (response.status, body["code"]) == (400, 50035)
    assert path in str(body["errors"])


async def test_a_dm_opens_a_channel_and_lands_with_the_user(scene: Scene, bot: SampleBot) -> None:
    alice = await bot.fetch_user(scene.alice.id)
    await alice.send("welcome")
    assert [m.content for m in scene.fake.dms_to(scene.alice)] == ["welcome"]
    carol = await bot.fetch_user(scene.carol.id)
    with pytest.raises(discord.Forbidden) as refused:
        await carol.send("welcome")
    assert refused.value.code == 50007


async def test_message_events_follow_the_intents(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert scene.fake.urls is not None
    for owner, attribute, value in overrides(scene.fake.urls.api, scene.fake.urls.gateway):
        monkeypatch.setattr(owner, attribute, value)
    intents = discord.Intents(guilds=True, guild_messages=True)
    client = discord.Client(intents=intents, guild_ready_timeout=0.1)
    task = asyncio.create_task(client.start(scene.fake.token))
    try:
        await scene.fake.wait_until_connected()
        await client.wait_until_ready()
        channel = client.get_channel(scene.general.id)
        assert isinstance(channel, discord.TextChannel)
        waiter = asyncio.create_task(client.wait_for("message", timeout=2))
        await channel.send("seen by the gateway")
        assert (await waiter).content == "seen by the gateway"
    finally:
        await client.close()
        await task


async def test_rate_limit_headers_pace_the_client_without_429s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeDiscord(rate_limit=RateLimitPolicy(limit=2, window=0.3))
    guild = fake.add_guild("paced")
    room = fake.add_channel(guild, "room")
    async with fake:
        assert fake.urls is not None
        monkeypatch.setattr(discord.http.Route, "BASE", fake.urls.api)
        client = discord.Client(intents=discord.Intents.none())
        await client.login(fake.token)
        try:
            channel = await client.fetch_channel(room.id)
            assert isinstance(channel, discord.TextChannel)
            for n in range(5):
                await channel.send(f"message {n}")
        finally:
            await client.close()
    assert [r.status for r in fake.calls(SEND)] == [200] * 5
    assert len(fake.messages_in(room)) == 5


async def test_a_crash_inside_the_fake_fails_the_test_at_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeDiscord()
    guild = fake.add_guild("g")
    room = fake.add_channel(guild, "room")

    def broken(channel_id: object) -> None:
        raise LookupError("a bug in the fake")

    await fake.start()
    assert fake.urls is not None
    monkeypatch.setattr(fake.world, "channel", broken)
    headers = {"Authorization": f"Bot {fake.token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{fake.urls.api}/channels/{room.id}", headers=headers) as response,
    ):
        assert response.status == 500
    with pytest.raises(RuntimeError, match="crashed 1 time"):
        await fake.stop()
