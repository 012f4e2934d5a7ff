"""Level roles and the weekly champion role through the real bot, a real worker and the fake.

One clock-controlled world: the bot's clock stays at ``START`` (the Monday of week 1) until the
champion test moves it to the next two weekly posts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
import pytest_asyncio

from fakediscord import Message, Permission, Role, User
from tests.bot.conftest import MONDAY, World, start_world

pytestmark = pytest.mark.asyncio(loop_scope="module")

BOT_ROLE_POSITION = 40
ROLE_WAIT_S = 30.0  # the role loop polls every few seconds; a loaded machine is slower
POST_TIME = timedelta(hours=9, seconds=30)  # just after the 09:00 posts


@dataclass
class Roles:
    world: World
    apprentice: Role  # level 2 (50 XP)
    adept: Role  # level 4 (300 XP)
    champion: Role
    staff: Role  # above the bot's role: it can never give it


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("roles"), workers=1, clock=True):
        yield started


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def roles(world: World) -> Roles:
    fake, guild = world.fake, world.guild
    setup = await world.slash(world.owner, "admin setup", channel=world.quests, time="09:00")
    assert "The daily quest goes to" in (await setup.original()).content
    # An admin gives the bot Manage Roles and drags its role up, as the operators' docs ask.
    mine = fake.bot_role(guild)
    await fake.update_role(
        mine, position=BOT_ROLE_POSITION, permissions=mine.permissions | Permission.MANAGE_ROLES
    )
    return Roles(
        world,
        apprentice=fake.add_role(guild, "apprentice", position=2),
        adept=fake.add_role(guild, "adept", position=3),
        champion=fake.add_role(guild, "champion of the week", position=4),
        staff=fake.add_role(guild, "staff", position=BOT_ROLE_POSITION + 5),
    )


async def _reply(world: World, user: User, command: str, **options: object) -> str:
    handle = await world.slash(user, command, **options)
    reply = await handle.original(timeout=10)
    assert reply.ephemeral
    return reply.content


async def _xp(world: World, learner: User, amount: int, total: int) -> None:
    """Grant ``amount`` by ``/admin xp``; ``total`` is the learner's total it must give."""
    text = await _reply(
        world, world.owner, "admin xp", member=learner, amount=amount, reason="roles test"
    )
    assert text == (
        f"{amount:+,} XP for <@{learner.id}>: their total is now {total:,}. Reason: roles test"
    )


def _holds(roles: Roles, learner: User) -> set[int]:
    return roles.world.fake.member_roles(roles.world.guild, learner)


async def _until(check: Callable[[], bool], what: str, timeout: float = ROLE_WAIT_S) -> None:
    """Poll the fake (cheap, in-process) until ``check`` holds; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        await asyncio.sleep(0.05)


async def test_a_new_level_role_is_backfilled_to_members_already_there(roles: Roles) -> None:
    world = roles.world
    there, below = world.learner(), world.learner()
    await _xp(world, there, 60, total=60)
    await _xp(world, below, 40, total=40)
    text = await _reply(world, world.owner, "admin roles add", level=2, role=roles.apprentice)
    assert f"Members who reach level 2 now get <@&{roles.apprentice.id}>" in text
    assert "already at level 2 will get it in the background" in text
    await _until(lambda: roles.apprentice.id in _holds(roles, there), "the backfill")
    assert _holds(roles, below) == set()


async def test_admin_xp_crossing_the_level_gives_the_role_and_a_revoke_takes_it(
    roles: Roles,
) -> None:
    world = roles.world
    learner = world.learner()
    await _xp(world, learner, 55, total=55)
    await _until(lambda: _holds(roles, learner) == {roles.apprentice.id}, "the level-up")
    await _xp(world, learner, -10, total=45)
    await _until(lambda: _holds(roles, learner) == set(), "the role taken back")
    removals = [
        w for w in world.fake.role_writes(world.guild) if w.user_id == learner.id and not w.added
    ]
    assert [(w.role_id, w.status, w.reason) for w in removals] == [
        (roles.apprentice.id, 204, "below level 2")
    ]
    listing = await _reply(world, world.owner, "admin roles list")
    assert "Mode: **stack**" in listing
    assert f"Level 2 → <@&{roles.apprentice.id}> · held by " in listing


async def test_a_graded_submission_crossing_the_level_earns_the_role(roles: Roles) -> None:
    world = roles.world
    learner = world.learner()
    assert (await world.submit_reply(learner)).startswith("Queued")
    await _until(  # the build task pays 60 XP: level 2
        lambda: roles.apprentice.id in _holds(roles, learner), "the role after grading", 120
    )


async def test_a_role_the_bot_cannot_give_is_refused_or_reported(roles: Roles) -> None:
    world = roles.world
    writes = len(world.fake.role_writes(world.guild))
    text = await _reply(world, world.owner, "admin roles add", level=4, role=roles.staff)
    assert f"I cannot give <@&{roles.staff.id}>: it is not below my highest role" in text
    assert "Drag my role above it" in text
    assert len(world.fake.role_writes(world.guild)) == writes  # nothing was tried

    text = await _reply(world, world.owner, "admin roles add", level=4, role=roles.adept)
    assert f"Members who reach level 4 now get <@&{roles.adept.id}>" in text
    # A moderator later drags the level role above the bot's: Discord refuses with 50013.
    await world.fake.update_role(roles.adept, position=BOT_ROLE_POSITION + 10)
    learner = world.learner()
    await _xp(world, learner, 300, total=300)
    await _until(lambda: _holds(roles, learner) == {roles.apprentice.id}, "the lower role")
    await _until(
        lambda: any(
            w.role_id == roles.adept.id and w.status == 403
            for w in world.fake.role_writes(world.guild)
        ),
        "Discord's refusal",
    )
    listing = await _reply(world, world.owner, "admin roles list")
    assert f"Discord refused to give <@&{roles.adept.id}>: Missing Permissions" in listing
    assert "move my role above it" in listing
    await world.fake.update_role(roles.adept, position=3)  # fixed: the retry will succeed


def _weekly_post(world: World, week_number: int) -> Message:
    posts = [
        m
        for m in world.fake.messages_in(world.quests)
        if m.embeds and m.embeds[0].get("title", "").startswith("🏆 Week")
    ]
    assert len(posts) == week_number, [p.embeds[0]["title"] for p in posts]
    return posts[-1]


async def test_the_champion_role_moves_to_each_weeks_first_place(roles: Roles) -> None:
    world = roles.world
    text = await _reply(world, world.owner, "admin setup", **{"champion-role": roles.champion})
    assert f"Champion role: <@&{roles.champion.id}>" in text
    first, second = world.learner(), world.learner()
    await _xp(
        world, first, 9000, total=9000
    )  # week 1's first place, far ahead of the other tests' members

    await world.at(MONDAY + timedelta(days=7) + POST_TIME)
    post = _weekly_post(world, 1)
    assert f"🏆 Champion of the week: <@{first.id}>" in post.embeds[0]["description"]
    assert not post.pings.users
    await _until(lambda: roles.champion.id in _holds(roles, first), "week 1's champion")

    await _xp(world, second, 9500, total=9500)  # week 2
    await world.at(MONDAY + timedelta(days=14) + POST_TIME)
    post = _weekly_post(world, 2)
    assert f"🏆 Champion of the week: <@{second.id}>" in post.embeds[0]["description"]
    await _until(lambda: roles.champion.id in _holds(roles, second), "week 2's champion")
    await _until(lambda: roles.champion.id not in _holds(roles, first), "week 1's loses it")
