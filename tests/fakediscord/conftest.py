"""A small world on a started FakeDiscord, and the sample bot connected to it in-process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import discord
import pytest

from fakediscord import Channel, FakeDiscord, Guild, Permission, Role, User
from fakediscord.gateway import Session
from fakediscord.launch import overrides
from tests.fakediscord.sample_bot import SampleBot


@dataclass
class Scene:
    fake: FakeDiscord
    guild: Guild
    general: Channel
    quiet: Channel
    mods: Role
    #: a plain member
    alice: User
    #: a member with Manage Server
    bob: User
    #: a member who accepts no DMs
    carol: User


@pytest.fixture
async def scene() -> AsyncIterator[Scene]:
    fake = FakeDiscord(heartbeat_interval=0.5)
    guild = fake.add_guild("brrr study group")
    general = fake.add_channel(guild, "general")
    quiet = fake.add_channel(guild, "quiet")
    fake.deny_bot(quiet, Permission.SEND_MESSAGES)
    mods = fake.add_role(guild, "mods", permissions=Permission.MANAGE_GUILD)
    alice = fake.add_user("alice")
    bob = fake.add_user("bob")
    carol = fake.add_user("carol", dms_open=False)
    fake.add_member(guild, alice)
    fake.add_member(guild, bob, roles=[mods])
    fake.add_member(guild, carol)
    async with fake:
        yield Scene(fake, guild, general, quiet, mods, alice, bob, carol)


def redirect(fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point this process's discord.py at ``fake``."""
    assert fake.urls is not None
    for owner, attribute, value in overrides(fake.urls.api, fake.urls.gateway):
        monkeypatch.setattr(owner, attribute, value)


@contextlib.asynccontextmanager
async def running_bot(
    fake: FakeDiscord, guild: Guild, *, replacing: Session | None = None
) -> AsyncIterator[SampleBot]:
    """A sample bot in this process, gateway connected (``replacing``: after an earlier one)."""
    client = SampleBot(guild.id, ready_timeout=0.1)
    task = asyncio.create_task(client.start(fake.token))
    try:
        await fake.wait_until_connected(replacing=replacing)
        yield client
    finally:
        await client.close()
        with contextlib.suppress(discord.ConnectionClosed):
            await task


@pytest.fixture
async def bot(scene: Scene, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SampleBot]:
    """The sample bot, logged in, commands synced, gateway connected (``on_ready`` may lag)."""
    redirect(scene.fake, monkeypatch)
    async with running_bot(scene.fake, scene.guild) as client:
        yield client
