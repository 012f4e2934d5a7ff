"""The role reconciler against an in-memory Discord: grants, revokes, backfills and failures."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.db.models import Guild, LevelRole, Member, MemberXp, RoleGrant, RoleSync
from bot.progress import champions
from bot.progress.awards import award_verdict
from bot.progress.level_roles import add_level_role, remove_level_role, set_mode
from bot.progress.periods import week_key
from bot.progress.role_queue import queue_users
from bot.progress.role_sync import (
    FIRST_RETRY,
    LEASE,
    DrainResult,
    RoleWriteRefused,
    UnknownMember,
    UnknownRole,
    drain,
)
from tests import timeline
from tests.progress.world import GUILD_ID, World

NOW = timeline.monday_after(timeline.now()) + timedelta(hours=12)
MOD = 999
APPRENTICE, ADEPT, CHAMPION = 9002, 9004, 9100  # level 2 (50 XP), level 4 (300 XP), champion


@dataclass
class FakeDiscord:
    """Members' roles as Discord holds them, and every write the reconciler asked for."""

    roles: dict[int, set[int]] = field(default_factory=dict)
    writes: list[tuple[str, int, int]] = field(default_factory=list)
    refused: set[int] = field(default_factory=set)  # roles above the bot's
    departed: set[int] = field(default_factory=set)
    deleted: set[int] = field(default_factory=set)
    during_write: Callable[[], Awaitable[None]] | None = None

    async def add(self, guild_id: int, user_id: int, role_id: int, reason: str) -> None:
        await self._write("add", user_id, role_id)
        self.roles.setdefault(user_id, set()).add(role_id)

    async def remove(self, guild_id: int, user_id: int, role_id: int, reason: str) -> None:
        await self._write("remove", user_id, role_id)
        self.roles.get(user_id, set()).discard(role_id)

    async def _write(self, kind: str, user_id: int, role_id: int) -> None:
        self.writes.append((kind, user_id, role_id))
        if self.during_write is not None:
            hook, self.during_write = self.during_write, None
            await hook()
        if user_id in self.departed:
            raise UnknownMember()
        if role_id in self.deleted:
            raise UnknownRole()
        if role_id in self.refused:
            raise RoleWriteRefused(50013, "Missing Permissions")

    def of(self, user_id: int) -> set[int]:
        return self.roles.get(user_id, set())


@dataclass
class Store:
    sessions: async_sessionmaker[AsyncSession]

    @property
    def engine(self) -> AsyncEngine:
        return self.sessions.kw["bind"]


class Clock:
    def __init__(self, start: datetime) -> None:
        self.moment = start

    def __call__(self) -> datetime:
        return self.moment


async def _configure(
    world: World, mode: str = "stack", roles: dict[int, int] | None = None
) -> None:
    async with world.sessions() as session, session.begin():
        await set_mode(session, guild_id=GUILD_ID, mode=mode, actor_user_id=MOD, now=NOW)
        for level, role_id in (roles or {2: APPRENTICE, 4: ADEPT}).items():
            await add_level_role(
                session, guild_id=GUILD_ID, level=level, role_id=role_id, actor_user_id=MOD, now=NOW
            )


async def _drain(world: World, discord: FakeDiscord, at: datetime = NOW) -> DrainResult:
    return await drain(Store(world.sessions), discord, now=Clock(at), limit=1000)


async def _grants(world: World) -> set[tuple[int, int]]:
    async with world.sessions() as session:
        rows = await session.execute(select(RoleGrant.user_id, RoleGrant.role_id))
        return {(user_id, role_id) for user_id, role_id in rows}


async def _queue(world: World) -> list[RoleSync]:
    async with world.sessions() as session:
        return list(await session.scalars(select(RoleSync).order_by(RoleSync.user_id)))


async def test_stack_mode_gives_and_takes_back_as_xp_crosses_levels(world: World) -> None:
    await _configure(world)
    discord = FakeDiscord()
    ada = await world.member(1)
    await world.grant(ada, 60, NOW)
    assert (await _drain(world, discord)).added == 1
    assert discord.of(1) == {APPRENTICE}
    await world.grant(ada, 250, NOW)  # 310: level 4
    await _drain(world, discord)
    assert discord.of(1) == {APPRENTICE, ADEPT}
    await world.grant(ada, -100, NOW)  # 210: back to level 3
    await _drain(world, discord)
    assert discord.of(1) == {APPRENTICE}
    await world.grant(ada, -300, NOW)  # clamped to 0
    result = await _drain(world, discord)
    assert (discord.of(1), result.removed, await _grants(world), await _queue(world)) == (
        set(),
        1,
        set(),
        [],
    )


async def test_highest_mode_swaps_the_lower_role_for_the_higher(world: World) -> None:
    await _configure(world, mode="highest")
    discord = FakeDiscord()
    ada = await world.member(1)
    await world.grant(ada, 60, NOW)
    await _drain(world, discord)
    assert discord.of(1) == {APPRENTICE}
    await world.grant(ada, 300, NOW)
    await _drain(world, discord)
    assert discord.of(1) == {ADEPT}
    assert discord.writes[-2:] == [("add", 1, ADEPT), ("remove", 1, APPRENTICE)]
    await world.grant(ada, -200, NOW)  # 160: level 3
    await _drain(world, discord)
    assert (discord.of(1), await _grants(world)) == ({APPRENTICE}, {(1, APPRENTICE)})


async def test_a_new_role_is_backfilled_to_exactly_the_members_at_its_level(world: World) -> None:
    for user_id, xp in {1: 40, 2: 50, 3: 900, 4: 0}.items():
        member_id = await world.member(user_id)
        if xp:
            await world.grant(member_id, xp, NOW)
    discord = FakeDiscord()
    assert await _drain(world, discord) == DrainResult()  # no roles yet: nobody was queued
    await _configure(world, roles={2: APPRENTICE})
    result = await _drain(world, discord)
    assert (result.synced, result.added) == (2, 2)
    assert sorted(discord.writes) == [("add", 2, APPRENTICE), ("add", 3, APPRENTICE)]
    assert await _grants(world) == {(2, APPRENTICE), (3, APPRENTICE)}


async def test_removing_a_level_role_takes_it_back(world: World) -> None:
    await _configure(world)
    discord = FakeDiscord()
    for user_id in (1, 2):
        await world.grant(await world.member(user_id), 400, NOW)
    await _drain(world, discord)
    async with world.sessions() as session, session.begin():
        await remove_level_role(session, guild_id=GUILD_ID, level=2, actor_user_id=MOD, now=NOW)
    await _drain(world, discord)
    assert discord.of(1) == discord.of(2) == {ADEPT}
    assert await _grants(world) == {(1, ADEPT), (2, ADEPT)}


async def test_a_refused_role_backs_off_while_the_others_flow(world: World) -> None:
    await _configure(world)
    discord = FakeDiscord(refused={ADEPT})
    for user_id, xp in {1: 400, 2: 400, 3: 60}.items():
        await world.grant(await world.member(user_id), xp, NOW)
    result = await _drain(world, discord)
    assert (result.synced, result.failed) == (1, 2)
    assert discord.of(1) == discord.of(2) == discord.of(3) == {APPRENTICE}
    # One refusal per role and pass: the second member waited without asking Discord again.
    assert [w for w in discord.writes if w[2] == ADEPT] == [("add", 1, ADEPT)]
    waiting = await _queue(world)
    assert [(row.user_id, row.attempts) for row in waiting] == [(1, 1), (2, 1)]
    assert all(row.due_at == NOW + FIRST_RETRY for row in waiting)
    assert "Missing Permissions — give me Manage Roles and move my role above it" in (
        waiting[0].last_error or ""
    )
    assert await _drain(world, discord, NOW + FIRST_RETRY / 2) == DrainResult()  # not yet due
    again = await _drain(world, discord, NOW + FIRST_RETRY)
    assert again.failed == 2
    assert {row.due_at for row in await _queue(world)} == {NOW + FIRST_RETRY * 3}  # doubled
    discord.refused.clear()  # a moderator moved the bot's role up
    fixed = await _drain(world, discord, NOW + FIRST_RETRY * 3)
    assert (fixed.synced, discord.of(1), await _queue(world)) == (2, {APPRENTICE, ADEPT}, [])


async def test_a_member_who_left_loses_their_grants_and_queue_row(world: World) -> None:
    await _configure(world)
    discord = FakeDiscord()
    for user_id in (1, 2):
        await world.grant(await world.member(user_id), 60, NOW)
    await _drain(world, discord)
    discord.departed.add(1)
    for user_id in (1, 2):
        await world.grant(await world.member(user_id), 300, NOW)
    result = await _drain(world, discord)
    assert result.synced == 2
    assert await _grants(world) == {(2, APPRENTICE), (2, ADEPT)}
    assert await _queue(world) == []


async def test_a_role_deleted_in_discord_leaves_the_configuration(world: World) -> None:
    await _configure(world)
    discord = FakeDiscord(deleted={APPRENTICE})
    await world.grant(await world.member(1), 400, NOW)
    await _drain(world, discord)
    assert discord.of(1) == {ADEPT}
    async with world.sessions() as session:
        levels = set(await session.scalars(select(LevelRole.level)))
    assert (levels, await _grants(world), await _queue(world)) == ({4}, {(1, ADEPT)}, [])


async def test_an_anonymised_member_loses_every_role_the_bot_gave(world: World) -> None:
    await _configure(world)
    discord = FakeDiscord()
    ada = await world.member(1)
    await world.grant(ada, 400, NOW)
    await _drain(world, discord)
    discord.roles[1].add(777)  # a role a moderator gave by hand stays
    async with world.sessions() as session, session.begin():
        await session.execute(
            update(Member).where(Member.id == ada).values(user_id=-ada, anonymised_at=NOW)
        )
        await queue_users(session, GUILD_ID, [1], now=NOW)
    await _drain(world, discord)
    assert (discord.of(1), await _grants(world)) == ({777}, set())


async def test_a_change_during_the_sync_is_synced_too(world: World) -> None:
    await _configure(world)
    ada = await world.member(1)
    await world.grant(ada, 60, NOW)

    async def level_up_meanwhile() -> None:
        await world.grant(ada, 300, NOW)

    discord = FakeDiscord(during_write=level_up_meanwhile)
    first = await _drain(world, discord)
    assert first.added == 2  # the member was queued again and synced in the same drain
    assert (discord.of(1), await _queue(world)) == ({APPRENTICE, ADEPT}, [])


async def test_a_pass_stopped_mid_write_is_retried_when_its_lease_ends(world: World) -> None:
    await _configure(world)
    await world.grant(await world.member(1), 60, NOW)

    class Stopping(FakeDiscord):
        async def add(self, guild_id: int, user_id: int, role_id: int, reason: str) -> None:
            raise asyncio.CancelledError  # the bot shuts down during the write

    with pytest.raises(asyncio.CancelledError):
        await _drain(world, Stopping())
    discord = FakeDiscord()
    assert await _drain(world, discord, NOW + LEASE / 2) == DrainResult()  # still leased
    assert (await _drain(world, discord, NOW + LEASE)).synced == 1
    assert discord.of(1) == {APPRENTICE}


async def _set_champion_role(world: World) -> None:
    async with world.sessions() as session, session.begin():
        await session.execute(
            update(Guild).where(Guild.id == GUILD_ID).values(champion_role_id=CHAMPION)
        )


async def _crown(world: World, week: str) -> tuple[champions.Champion, ...]:
    async with world.sessions() as session, session.begin():
        return await champions.crown(session, guild_id=GUILD_ID, week_key=week, now=NOW)


async def test_the_champion_role_moves_to_each_weeks_first_places(world: World) -> None:
    week1, week2 = NOW - timedelta(days=14), NOW - timedelta(days=7)
    key1, key2 = week_key(week1.date()), week_key(week2.date())
    ada, bob, cy = [await world.member(user_id, f"m{user_id}") for user_id in (1, 2, 3)]
    await world.grant(ada, 50, week1)
    await world.grant(bob, 50, week1 + timedelta(hours=1))  # a tie: both are champions
    await world.grant(cy, 10, week1)
    await _set_champion_role(world)
    discord = FakeDiscord()
    first = await _crown(world, key1)
    assert [(c.user_id, c.display_name, c.xp) for c in first] == [(1, "m1", 50), (2, "m2", 50)]
    await _drain(world, discord)
    assert discord.of(1) == discord.of(2) == {CHAMPION} and discord.of(3) == set()

    await world.grant(cy, 80, week2)
    assert [c.user_id for c in await _crown(world, key2)] == [3]
    await _drain(world, discord)
    assert (discord.of(1), discord.of(2), discord.of(3)) == (set(), set(), {CHAMPION})
    assert [c.user_id for c in await _crown(world, key2)] == [3]  # a retried post: the same

    quiet = week_key((NOW + timedelta(days=7)).date())  # nobody earned XP that week
    assert await _crown(world, quiet) == ()
    await _drain(world, discord)
    assert discord.of(3) == set()
    async with world.sessions() as session:
        assert await champions.current_champions(session, GUILD_ID) == set()


async def test_hidden_members_are_never_crowned(world: World) -> None:
    week = NOW - timedelta(days=7)
    ada, bob = await world.member(1), await world.member(2)
    await world.grant(ada, 90, week)
    await world.grant(bob, 40, week)
    async with world.sessions() as session, session.begin():
        await session.execute(
            update(MemberXp).where(MemberXp.member_id == ada).values(listed=False)
        )
    assert [c.user_id for c in await _crown(world, week_key(week.date()))] == [2]


async def _quiz(world: World, member_id: int) -> None:
    async with world.sessions() as session, session.begin():
        await award_verdict(
            session,
            guild_id=GUILD_ID,
            member_id=member_id,
            task_ref="q1/quiz",
            task_xp=60,
            status="passed",
            score=1.0,
            submission_id=None,
            tz=world.tz,
            now=NOW,
            source="quiz",
        )


XP_PATHS: dict[str, Callable[[World, int], Awaitable[object]]] = {
    "graded build": lambda world, member: world.verdict(member, NOW, xp=60),
    "quiz": _quiz,
    "/done": lambda world, member: world.done(member, NOW, "q1/read", xp=60),
    "/admin xp": lambda world, member: world.grant(member, 60, NOW),
}


@pytest.mark.parametrize("path", XP_PATHS)
async def test_every_xp_path_queues_the_member_for_their_level_role(
    world: World, path: str
) -> None:
    await _configure(world)
    discord = FakeDiscord()
    member = await world.member(7)
    assert await _queue(world) == []
    await XP_PATHS[path](world, member)  # 60 XP: level 2
    assert [row.user_id for row in await _queue(world)] == [7]
    await _drain(world, discord)
    assert discord.of(7) == {APPRENTICE}
