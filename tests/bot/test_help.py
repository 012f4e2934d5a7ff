"""/help through the real bot: what a learner sees, and what a moderator sees besides."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from fakediscord import User
from tests.bot.conftest import World, start_world
from tests.bot.test_learner_commands import _text

pytestmark = pytest.mark.asyncio(loop_scope="module")

SUBCOMMAND, GROUP, MESSAGE = 1, 2, 3


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("help"), workers=0):
        yield started


def _registered(world: World) -> tuple[set[str], set[str]]:
    """What Discord has registered, as /help would name it: (everyone's, moderators')."""
    everyone: set[str] = set()
    moderators: set[str] = set()
    for command in world.fake.commands():
        names = moderators if command.default_member_permissions is not None else everyone
        if command.kind == MESSAGE:
            names.add(command.name)
        else:
            names |= {f"/{name}" for name in _leaves(command.name, command.data)}
    return everyone, moderators


def _leaves(prefix: str, data: dict[str, Any]) -> list[str]:
    groups = [o for o in data.get("options", []) if o.get("type") in (SUBCOMMAND, GROUP)]
    if not groups:
        return [prefix]
    return [leaf for o in groups for leaf in _leaves(f"{prefix} {o['name']}", o)]


def _listed(text: str, registered: set[str]) -> list[str]:
    """The registered commands a /help text lists, one entry per line that lists one: a
    `/name options` line names the longest registered name it starts with."""
    listed = re.findall(r"^\*\*([^*]+)\*\* · on a message", text, re.M)
    for usage in re.findall(r"^`(/[^`]+)` · ", text, re.M):
        names = [n for n in registered if usage == n or usage.startswith(n + " ")]
        listed.append(max(names, key=len) if names else usage)
    return sorted(listed)


async def _help(world: World, user: User) -> str:
    handle = await world.slash(user, "help")
    reply = await handle.original(timeout=10)
    assert reply.ephemeral
    return "\n".join(_text(m) for m in [reply, *handle.followups])


async def test_a_learner_sees_every_learner_command_and_no_admin(world: World) -> None:
    everyone, moderators = _registered(world)
    assert "/help" in everyone and "/admin setup" in moderators
    text = await _help(world, world.learner())
    assert _listed(text, everyone) == sorted(everyone)  # subcommands by their whole name
    assert "Moderator commands" not in text  # and no /admin line: the list is exactly everyone
    assert "`/leaderboard [period] [board] [task]` · The server's top learners" in text
    assert "No daily quest yet" in text and "/admin setup" in text  # before setup


async def test_a_moderator_also_sees_the_admin_commands(world: World) -> None:
    everyone, moderators = _registered(world)
    every = everyone | moderators
    assert _listed(await _help(world, world.owner), every) == sorted(every)  # Manage Server
    setup = await world.slash(
        world.owner, "admin setup", channel=world.quests, time="00:00", moderator_role=world.mods
    )
    await setup.original()
    assert _listed(await _help(world, world.moderator), every) == sorted(every)  # the role


async def test_todays_quest_and_how_to_complete_each_task(world: World) -> None:
    setup = await world.slash(world.owner, "admin setup", channel=world.quests)
    await setup.original()
    text = await _help(world, world.learner())
    assert "Today's quest: Go Brrrr" in text  # the first quest of the map, from setup day
    assert "/submit task:go-brrrr/matmul-three-ways" in text
    assert "or use **Submit solution** on a message with your code" in text
    assert "/answer task:go-brrrr/shape-predictions" in text
    assert "/done task:go-brrrr/zero-to-hero" in text
    assert "No daily quest yet" not in text
