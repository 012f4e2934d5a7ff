"""Level-role rules and configuration: what each member should hold, and who each change queues."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from sqlalchemy import event, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.db.models import AuditEntry, Member, RoleGrant, RoleSync
from bot.progress import level_roles
from bot.progress.level_roles import (
    MAX_LEVEL,
    LevelRoleRefused,
    add_level_role,
    desired_roles,
    list_level_roles,
    remove_level_role,
    set_mode,
)
from bot.progress.role_queue import queue_users
from tests import timeline
from tests.progress.world import GUILD_ID, World

NOW = timeline.monday_after(timeline.now()) + timedelta(hours=12)
MOD = 999
APPRENTICE, ADEPT, MASTER = 9002, 9004, 9006  # role ids for levels 2, 4 and 6
LEVEL_ROLES = {2: APPRENTICE, 4: ADEPT}


def test_stack_keeps_every_level_role_reached_and_highest_only_the_top_one() -> None:
    # level 2 at 50 XP, level 4 at 300, level 6 at 750
    roles = {**LEVEL_ROLES, 6: MASTER}
    assert desired_roles(0, roles, "stack") == set()
    assert desired_roles(49, roles, "stack") == set()
    assert desired_roles(50, roles, "stack") == {APPRENTICE}
    assert desired_roles(299, roles, "highest") == {APPRENTICE}
    assert desired_roles(300, roles, "stack") == {APPRENTICE, ADEPT}
    assert desired_roles(300, roles, "highest") == {ADEPT}
    assert desired_roles(10_000, roles, "stack") == {APPRENTICE, ADEPT, MASTER}
    assert desired_roles(10_000, roles, "highest") == {MASTER}
    assert desired_roles(10_000, {}, "stack") == set()


async def _members_with_xp(world: World, totals: dict[int, int]) -> None:
    """Members (by user id) with the given all-time XP, earned before any level role existed."""
    for user_id, xp in totals.items():
        member_id = await world.member(user_id)
        if xp:
            await world.grant(member_id, xp, NOW - timedelta(days=3))


async def _add(world: World, level: int, role_id: int) -> level_roles.Added:
    async with world.sessions() as session, session.begin():
        return await add_level_role(
            session, guild_id=GUILD_ID, level=level, role_id=role_id, actor_user_id=MOD, now=NOW
        )


async def _queued(world: World) -> set[int]:
    async with world.sessions() as session:
        return set(await session.scalars(select(RoleSync.user_id)))


async def _clear_queue(world: World) -> None:
    async with world.sessions() as session, session.begin():
        await session.execute(RoleSync.__table__.delete())


async def test_adding_a_role_queues_exactly_the_members_at_its_level(world: World) -> None:
    await _members_with_xp(world, {1: 0, 2: 49, 3: 50, 4: 200, 5: 5000, 6: 120})
    anonymised = await world.member(7)
    await world.grant(anonymised, 500, NOW - timedelta(days=3))
    async with world.sessions() as session, session.begin():
        await session.execute(
            update(Member)
            .where(Member.id == anonymised)
            .values(user_id=-anonymised, anonymised_at=NOW)
        )
    added = await _add(world, 2, APPRENTICE)
    assert (added.level, added.role_id, added.replaced_role_id, added.queued) == (
        2,
        APPRENTICE,
        None,
        4,
    )
    assert await _queued(world) == {3, 4, 5, 6}
    async with world.sessions() as session:
        [entry] = (await session.scalars(select(AuditEntry))).all()[-1:]
    assert (entry.action, entry.target, entry.details["level"]) == (
        "level_role.add",
        f"role:{APPRENTICE}",
        2,
    )


async def test_level_one_backfills_members_without_any_xp(world: World) -> None:
    await _members_with_xp(world, {1: 0, 2: 10})
    assert (await _add(world, 1, APPRENTICE)).queued == 2
    assert await _queued(world) == {1, 2}


async def test_in_highest_mode_a_lower_role_concerns_only_members_below_the_next_one(
    world: World,
) -> None:
    await _members_with_xp(world, {1: 40, 2: 60, 3: 299, 4: 300, 5: 900})
    async with world.sessions() as session, session.begin():
        await set_mode(session, guild_id=GUILD_ID, mode="highest", actor_user_id=MOD, now=NOW)
    await _add(world, 4, ADEPT)
    await _clear_queue(world)
    assert (await _add(world, 2, APPRENTICE)).queued == 2
    assert await _queued(world) == {2, 3}  # 4 and 5 keep only the level 4 role


async def test_backfill_is_a_few_statements_whatever_the_server_size(
    world: World, engine: AsyncEngine
) -> None:
    await _members_with_xp(world, dict.fromkeys(range(100, 103), 60))
    with _statements(engine) as small:
        first = await _add(world, 2, APPRENTICE)
    await _members_with_xp(world, dict.fromkeys(range(200, 260), 60))
    with _statements(engine) as large:
        second = await _add(world, 1, MASTER)
    assert (first.queued, second.queued) == (3, 63)
    assert len(small) == len(large) <= 8, large


@contextmanager
def _statements(engine: AsyncEngine) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(*args: object) -> None:
        seen.append(str(args[2]))

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)


@pytest.mark.parametrize(
    ("level", "role_id", "words"),
    [
        (0, MASTER, f"between 1 and {MAX_LEVEL}, not 0"),
        (MAX_LEVEL + 1, MASTER, f"between 1 and {MAX_LEVEL}, not {MAX_LEVEL + 1}"),
        (6, APPRENTICE, f"<@&{APPRENTICE}> is already the role for level 2"),
        (2, APPRENTICE, f"<@&{APPRENTICE}> is already the role for level 2."),
    ],
)
async def test_refusals_say_why(world: World, level: int, role_id: int, words: str) -> None:
    await _add(world, 2, APPRENTICE)
    with pytest.raises(LevelRoleRefused) as refused:
        await _add(world, level, role_id)
    assert words in str(refused.value)


async def test_replacing_a_levels_role_queues_its_holders_and_the_members_at_the_level(
    world: World,
) -> None:
    await _members_with_xp(world, {1: 60, 2: 10})
    await _add(world, 2, APPRENTICE)
    await _clear_queue(world)
    await _grant_roles(world, {APPRENTICE: [1, 3]})  # 3 left the board but holds the old role
    replaced = await _add(world, 2, MASTER)
    assert (replaced.replaced_role_id, replaced.queued) == (APPRENTICE, 1)  # 1 is at level 2
    assert await _queued(world) == {1, 3}


async def _grant_roles(world: World, holders: dict[int, list[int]]) -> None:
    async with world.sessions() as session, session.begin():
        for role_id, users in holders.items():
            session.add_all(
                RoleGrant(guild_id=GUILD_ID, user_id=u, role_id=role_id, granted_at=NOW)
                for u in users
            )


async def test_removing_a_role_queues_the_members_the_bot_gave_it_to(world: World) -> None:
    await _members_with_xp(world, {1: 60, 2: 400, 3: 0})
    await _add(world, 2, APPRENTICE)
    await _add(world, 4, ADEPT)
    await _clear_queue(world)
    await _grant_roles(world, {APPRENTICE: [1, 2], ADEPT: [2]})
    async with world.sessions() as session, session.begin():
        removed = await remove_level_role(
            session, guild_id=GUILD_ID, level=2, actor_user_id=MOD, now=NOW
        )
    assert (removed.role_id, removed.queued, await _queued(world)) == (APPRENTICE, 2, {1, 2})
    async with world.sessions() as session, session.begin():
        with pytest.raises(LevelRoleRefused, match="Level 2 has no role"):
            await remove_level_role(session, guild_id=GUILD_ID, level=2, actor_user_id=MOD, now=NOW)


async def test_switching_mode_queues_the_members_with_two_roles_or_more(world: World) -> None:
    await _members_with_xp(world, {1: 60, 2: 300, 3: 800})
    await _add(world, 2, APPRENTICE)
    await _add(world, 4, ADEPT)
    await _clear_queue(world)
    async with world.sessions() as session, session.begin():
        change = await set_mode(
            session, guild_id=GUILD_ID, mode="highest", actor_user_id=MOD, now=NOW
        )
        same = await set_mode(
            session, guild_id=GUILD_ID, mode="highest", actor_user_id=MOD, now=NOW
        )
        with pytest.raises(LevelRoleRefused, match="stack, highest"):
            await set_mode(session, guild_id=GUILD_ID, mode="all", actor_user_id=MOD, now=NOW)
    assert (change.old, change.new, change.queued) == ("stack", "highest", 2)
    assert (same.old, same.queued) == ("highest", 0)
    assert await _queued(world) == {2, 3}


async def test_list_shows_levels_holders_mode_and_the_last_error(world: World) -> None:
    await _add(world, 4, ADEPT)
    await _add(world, 2, APPRENTICE)
    await _clear_queue(world)
    await _grant_roles(world, {APPRENTICE: [1, 2, 3], ADEPT: [3]})
    async with world.sessions() as session, session.begin():
        await queue_users(session, GUILD_ID, [5, 6], now=NOW)
        await session.execute(
            update(RoleSync).where(RoleSync.user_id == 6).values(last_error="Discord refused")
        )
    async with world.sessions() as session:
        listing = await list_level_roles(session, GUILD_ID)
    assert listing.mode == "stack"
    assert [(r.level, r.role_id, r.holders) for r in listing.roles] == [
        (2, APPRENTICE, 3),
        (4, ADEPT, 1),
    ]
    assert (listing.waiting, listing.failing, listing.last_error) == (2, 1, "Discord refused")


async def test_an_unknown_server_lists_nothing(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as session:
        listing = await list_level_roles(session, 4242)
    assert (listing.mode, listing.roles, listing.waiting, listing.last_error) == (
        "stack",
        (),
        0,
        None,
    )
