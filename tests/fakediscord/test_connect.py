"""The real discord.py client logs in, connects and syncs commands against the fake."""

from __future__ import annotations

import asyncio

import aiohttp
import discord
import pytest

from fakediscord import FakeDiscord
from fakediscord.launch import overrides
from tests.fakediscord.conftest import Scene
from tests.fakediscord.sample_bot import SampleBot


async def test_login_ready_and_guild_create_fill_the_cache(scene: Scene, bot: SampleBot) -> None:
    await asyncio.wait_for(bot.wait_until_ready(), 3)
    assert bot.user is not None and bot.user.id == scene.fake.bot.id
    assert bot.application_id == scene.fake.application_id
    guild = bot.get_guild(scene.guild.id)
    assert guild is not None and guild.name == "brrr study group"
    assert {c.name for c in guild.text_channels} == {"general", "quiet"}
    assert "mods" in {r.name for r in guild.roles}
    quiet = guild.get_channel(scene.quiet.id)
    assert isinstance(quiet, discord.TextChannel)
    assert guild.me is not None and not quiet.permissions_for(guild.me).send_messages


async def test_commands_are_synced_with_default_member_permissions(
    scene: Scene, bot: SampleBot
) -> None:
    commands = {c.name: c for c in scene.fake.commands(scene.guild)}
    assert {"ping", "slow", "topic", "admin", "upload"} <= set(commands)
    assert commands["admin"].default_member_permissions == str(
        discord.Permissions(manage_guild=True).value
    )
    assert commands["ping"].default_member_permissions is None
    assert (
        len(scene.fake.calls("PUT /applications/{application_id}/guilds/{guild_id}/commands")) == 1
    )
    fetched = await bot.tree.fetch_commands(guild=discord.Object(scene.guild.id))
    assert {c.name for c in fetched} == set(commands)


async def test_identify_carries_the_bots_intents(scene: Scene, bot: SampleBot) -> None:
    session = await scene.fake.wait_until_connected()
    assert session.intents == bot.intents.value
    assert [c.outcome for c in scene.fake.gateway.connections] == ["identified"]
    assert scene.fake.gateway.heartbeats >= 1


async def test_a_wrong_token_is_a_login_failure(scene: Scene, bot: SampleBot) -> None:
    other = SampleBot(scene.guild.id)
    with pytest.raises(discord.LoginFailure):
        await other.login("not-the-token")
    await other.close()


async def test_json_content_type_is_exact_and_rate_limit_headers_are_sent(scene: Scene) -> None:
    assert scene.fake.urls is not None
    headers = {"Authorization": f"Bot {scene.fake.token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(scene.fake.urls.api + "/users/@me", headers=headers) as response,
    ):
        assert response.headers["Content-Type"] == "application/json"
        assert int(response.headers["X-RateLimit-Remaining"]) >= 0
        assert "X-RateLimit-Bucket" in response.headers
        assert (await response.json())["id"] == str(scene.fake.bot.id)


async def test_an_auto_sharded_client_finds_the_gateway_through_gateway_bot(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert scene.fake.urls is not None
    monkeypatch.setattr(discord.http.Route, "BASE", scene.fake.urls.api)
    client = discord.AutoShardedClient(intents=discord.Intents.none())
    task = asyncio.create_task(client.start(scene.fake.token))
    try:
        session = await scene.fake.wait_until_connected()
        assert session.identify["shard"] == [0, 1]
        assert len(scene.fake.calls("GET /gateway/bot", status=200)) == 1
    finally:
        await client.close()
        await task


async def test_raw_dispatches_reach_the_client(scene: Scene, bot: SampleBot) -> None:
    await scene.fake.dispatch("GUILD_UPDATE", {"id": str(scene.guild.id), "name": "renamed"})
    event = await bot.wait_for("guild_update", timeout=2)
    assert event[1].name == "renamed"


async def test_privileged_intents_the_app_lacks_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with FakeDiscord(privileged_intents=0) as fake:
        assert fake.urls is not None
        for owner, attribute, value in overrides(fake.urls.api, fake.urls.gateway):
            monkeypatch.setattr(owner, attribute, value)
        client = discord.Client(intents=discord.Intents(guilds=True, members=True))
        with pytest.raises(discord.PrivilegedIntentsRequired):
            await client.start(fake.token)
        await client.close()
    assert [c.outcome for c in fake.gateway.connections] == ["closed 4014"]
