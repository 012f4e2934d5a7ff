"""Member role writes through the real client: Discord's hierarchy, refusals, events and bucket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import discord
import pytest

from fakediscord import Channel, FakeDiscord, Guild, Permission, Role, RoleWrite, User
from fakediscord.ratelimits import MEMBER_ROLE, RateLimitPolicy
from tests.fakediscord.conftest import redirect, running_bot
from tests.fakediscord.sample_bot import SampleBot

LEARNERS = 8


@dataclass
class Ranks:
    fake: FakeDiscord
    guild: Guild
    general: Channel
    #: thread permissions taken from the bot
    threadless: Channel
    #: position 5, created before ``keeper``: outranks it on the tie
    elder: Role
    #: position 5, Manage Roles: the bot's highest role
    keeper: Role
    #: position 5, created after ``keeper``: below it
    peer: Role
    level: Role
    staff: Role
    booster: Role
    alice: User
    #: each holds ``peer`` at the start
    learners: list[User]


@pytest.fixture
async def ranks(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Ranks]:
    fake = FakeDiscord(heartbeat_interval=0.5)
    guild = fake.add_guild("ranks")
    general = fake.add_channel(guild, "general")
    threadless = fake.add_channel(guild, "threadless")
    fake.deny_bot(
        threadless, Permission.CREATE_PUBLIC_THREADS | Permission.SEND_MESSAGES_IN_THREADS
    )
    elder = fake.add_role(guild, "elder", position=5)
    keeper = fake.add_role(guild, "keeper", permissions=Permission.MANAGE_ROLES, position=5)
    peer = fake.add_role(guild, "peer", position=5)
    level = fake.add_role(guild, "level 3", position=3)
    staff = fake.add_role(guild, "staff", position=8)
    booster = fake.add_role(guild, "booster", position=2, managed=True)
    alice = fake.add_user("alice")
    fake.add_member(guild, alice)
    learners = [fake.add_user(f"learner{n}") for n in range(LEARNERS)]
    for learner in learners:
        fake.add_member(guild, learner, roles=[peer])
    await fake.grant_role(guild, fake.bot, keeper)
    async with fake:
        redirect(fake, monkeypatch)
        yield Ranks(
            fake,
            guild,
            general,
            threadless,
            elder,
            keeper,
            peer,
            level,
            staff,
            booster,
            alice,
            learners,
        )


@pytest.fixture
async def bot(ranks: Ranks) -> AsyncIterator[SampleBot]:
    async with running_bot(ranks.fake, ranks.guild) as client:
        await asyncio.wait_for(client.wait_until_ready(), 5)
        yield client


def _guild(bot: SampleBot, ranks: Ranks) -> discord.Guild:
    guild = bot.get_guild(ranks.guild.id)
    assert guild is not None
    return guild


def _role(bot: SampleBot, ranks: Ranks, role: Role) -> discord.Role:
    found = _guild(bot, ranks).get_role(role.id)
    assert found is not None
    return found


async def test_discord_py_sees_the_hierarchy_the_fake_enforces(
    ranks: Ranks, bot: SampleBot
) -> None:
    guild = _guild(bot, ranks)
    me = guild.me
    assert me.top_role.id == ranks.keeper.id
    assert me.guild_permissions.manage_roles
    assert _role(bot, ranks, ranks.booster).managed
    assert _role(bot, ranks, ranks.booster).is_integration()
    assert guild.self_role is not None and guild.self_role.is_bot_managed()
    assignable = {r.name for r in guild.roles if r.is_assignable()}
    assert assignable == {"peer", "level 3"}
    for role in guild.roles:
        assert ranks.fake.world.may_assign(ranks.guild, ranks.guild.roles[role.id]) is (
            role.is_assignable()
        ), role.name


async def test_channel_permissions_include_the_thread_bits(ranks: Ranks, bot: SampleBot) -> None:
    guild = _guild(bot, ranks)
    for channel, allowed in ((ranks.general, True), (ranks.threadless, False)):
        text = guild.get_channel(channel.id)
        assert isinstance(text, discord.TextChannel)
        permissions = text.permissions_for(guild.me)
        assert permissions.create_public_threads is allowed
        assert permissions.send_messages_in_threads is allowed
        assert permissions.send_messages
    assert not guild.me.guild_permissions.manage_threads


async def test_roles_are_given_and_taken_idempotently_with_a_reason(
    ranks: Ranks, bot: SampleBot
) -> None:
    member = await _guild(bot, ranks).fetch_member(ranks.alice.id)
    level = _role(bot, ranks, ranks.level)
    for _ in range(2):
        await member.add_roles(level, reason="reached level 3")
    assert ranks.fake.member_roles(ranks.guild, ranks.alice) == {ranks.level.id}
    for _ in range(2):
        await member.remove_roles(level)
    assert ranks.fake.member_roles(ranks.guild, ranks.alice) == set()
    write = RoleWrite(True, ranks.guild.id, ranks.alice.id, ranks.level.id, 204, "reached level 3")
    assert ranks.fake.role_writes(ranks.guild) == [
        write,
        write,
        RoleWrite(False, ranks.guild.id, ranks.alice.id, ranks.level.id, 204, None),
        RoleWrite(False, ranks.guild.id, ranks.alice.id, ranks.level.id, 204, None),
    ]
    # Without the GUILD_MEMBERS intent the bot hears of no one's role changes but its own.
    assert ranks.fake.dispatched("GUILD_MEMBER_UPDATE") == []


async def test_the_bot_hears_of_its_own_role_changes(ranks: Ranks, bot: SampleBot) -> None:
    me = _guild(bot, ranks).me
    updated = asyncio.create_task(bot.wait_for("member_update", timeout=5))
    await me.add_roles(_role(bot, ranks, ranks.peer))
    before, after = await updated
    assert ranks.peer.id not in {r.id for r in before.roles}
    assert ranks.peer.id in {r.id for r in after.roles}
    (event,) = ranks.fake.dispatched("GUILD_MEMBER_UPDATE")
    assert event["user"]["id"] == str(ranks.fake.bot.id)


@pytest.mark.parametrize("target", ["elder", "staff", "booster", "everyone"])
async def test_roles_the_bot_may_not_assign_get_50013(
    ranks: Ranks, bot: SampleBot, target: str
) -> None:
    role = ranks.guild.everyone if target == "everyone" else getattr(ranks, target)
    with pytest.raises(discord.Forbidden) as refused:
        await bot.http.add_role(ranks.guild.id, ranks.alice.id, role.id)
    assert (refused.value.code, refused.value.text) == (50013, "Missing Permissions")
    assert ranks.fake.member_roles(ranks.guild, ranks.alice) == set()
    assert [w.status for w in ranks.fake.role_writes()] == [403]


async def test_unknown_members_and_roles_are_404s(ranks: Ranks, bot: SampleBot) -> None:
    stranger = ranks.fake.add_user("stranger")
    with pytest.raises(discord.NotFound) as missing:
        await bot.http.add_role(ranks.guild.id, stranger.id, ranks.level.id)
    assert (missing.value.code, missing.value.text) == (10007, "Unknown Member")
    with pytest.raises(discord.NotFound) as missing:
        await bot.http.remove_role(ranks.guild.id, ranks.alice.id, 1234)
    assert (missing.value.code, missing.value.text) == (10011, "Unknown Role")


async def test_role_edits_mid_test_reach_the_bot_and_the_checks(
    ranks: Ranks, bot: SampleBot
) -> None:
    guild = _guild(bot, ranks)
    staff = _role(bot, ranks, ranks.staff)
    assert not staff.is_assignable()
    await _edit_role(bot, ranks.fake, ranks.staff, position=4)
    assert staff.is_assignable()
    await bot.http.add_role(guild.id, ranks.alice.id, staff.id)

    # Manage Roles gone: refused whatever the positions; Administrator implies it.
    await _edit_role(bot, ranks.fake, ranks.keeper, permissions=0)
    assert not guild.me.guild_permissions.manage_roles
    with pytest.raises(discord.Forbidden):
        await bot.http.add_role(guild.id, ranks.alice.id, ranks.level.id)
    await _edit_role(bot, ranks.fake, ranks.keeper, permissions=Permission.ADMINISTRATOR)
    assert guild.me.guild_permissions.manage_roles
    await bot.http.add_role(guild.id, ranks.alice.id, ranks.level.id)
    assert [w.status for w in ranks.fake.role_writes()] == [204, 403, 204]

    # Without its Manage Roles role, the bot's highest role is its own, at the bottom.
    lost = asyncio.create_task(bot.wait_for("member_update", timeout=5))
    await ranks.fake.revoke_role(ranks.guild, ranks.fake.bot, ranks.keeper)
    await lost
    assert guild.me.top_role.id == ranks.fake.bot_role(ranks.guild).id
    assert not any(r.is_assignable() for r in guild.roles)


async def _edit_role(
    bot: SampleBot,
    fake: FakeDiscord,
    role: Role,
    *,
    position: int | None = None,
    permissions: int | None = None,
) -> None:
    """An admin's edit, once the bot has processed the GUILD_ROLE_UPDATE."""
    updated = asyncio.create_task(bot.wait_for("guild_role_update", timeout=5))
    await fake.update_role(role, position=position, permissions=permissions)
    await updated


async def test_a_burst_of_role_writes_meets_429s_and_all_land(ranks: Ranks, bot: SampleBot) -> None:
    ranks.fake.role_write_limit = RateLimitPolicy(limit=3, window=0.2)
    guild_id = ranks.guild.id
    await asyncio.gather(
        *(bot.http.add_role(guild_id, u.id, ranks.level.id) for u in ranks.learners),
        *(bot.http.remove_role(guild_id, u.id, ranks.peer.id) for u in ranks.learners),
    )
    for learner in ranks.learners:
        assert ranks.fake.member_roles(ranks.guild, learner) == {ranks.level.id}
    statuses = [w.status for w in ranks.fake.role_writes()]
    assert statuses.count(204) == 2 * LEARNERS
    assert statuses.count(429) >= 1
    assert set(statuses) == {204, 429}


async def test_adds_and_removes_share_one_bucket_per_guild(ranks: Ranks) -> None:
    ranks.fake.role_write_limit = RateLimitPolicy(limit=2, window=30.0)
    assert ranks.fake.urls is not None
    path = MEMBER_ROLE.format(
        guild_id=ranks.guild.id, user_id=ranks.alice.id, role_id=ranks.level.id
    )
    url = ranks.fake.urls.api + path
    headers = {"Authorization": f"Bot {ranks.fake.token}"}
    seen = []
    async with aiohttp.ClientSession(headers=headers) as session:
        for method in ("PUT", "DELETE", "PUT"):
            async with session.request(method, url) as response:
                seen.append((response.status, dict(response.headers), await response.read()))
    (put, put_headers, _), (delete, delete_headers, _), (limited, headers_429, body) = seen
    assert (put, delete, limited) == (204, 204, 429)
    assert put_headers["X-RateLimit-Bucket"] == delete_headers["X-RateLimit-Bucket"]
    assert [put_headers["X-RateLimit-Remaining"], delete_headers["X-RateLimit-Remaining"]] == [
        "1",
        "0",
    ]
    assert headers_429["X-RateLimit-Remaining"] == "0"
    assert 0 < float(headers_429["X-RateLimit-Reset-After"]) <= 30
    assert int(headers_429["Retry-After"]) >= 1
    assert b'"retry_after"' in body and b'"global": false' in body
    assert ranks.fake.member_roles(ranks.guild, ranks.alice) == set()
