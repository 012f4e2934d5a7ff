"""Level roles: which Discord role each level earns, and the server's rules for keeping them.

Rules:

- A server maps levels (1 to ``MAX_LEVEL``) to roles, one role per level and one level per role.
- Mode ``stack`` (the default) keeps every level role a member has reached; ``highest`` keeps
  only the highest one reached.
- A member's level comes from their all-time XP (``bot.progress.levels``), so every XP path
  (grading, quizzes, ``/done``, moderator grants and revokes) moves their roles both ways.
- Changing the configuration queues, in the same transaction, exactly the members whose roles it
  may change, with one ``INSERT ... SELECT`` however many there are; the reconciler
  (``bot.progress.role_sync``) then writes to Discord at the pace Discord allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from sqlalchemy import ColumnElement, Select, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot import audit
from bot.db.dialect import upsert
from bot.db.models import Guild, LevelRole, Member, MemberXp, RoleGrant, RoleSync
from bot.progress.levels import level_for, xp_for_level
from bot.progress.role_queue import queue_selected
from bot.progress.totals import ALL_TIME_KEY

Mode = Literal["stack", "highest"]
MODES: tuple[Mode, ...] = get_args(Mode)
#: the highest level a role can be tied to: level 100 needs 247,500 XP, far past the whole map
MAX_LEVEL = 100


class LevelRoleRefused(ValueError):
    """A level-role change that cannot be made, with the reason in the moderator's words."""


@dataclass(frozen=True)
class RoleConfig:
    """What decides a member's roles in one server."""

    mode: Mode
    level_roles: Mapping[int, int]  # level -> role id
    champion_role_id: int | None


def desired_roles(total_xp: int, level_roles: Mapping[int, int], mode: Mode) -> set[int]:
    """The level roles a member with ``total_xp`` should hold."""
    level = level_for(total_xp)
    reached = [lvl for lvl in level_roles if lvl <= level]
    if not reached:
        return set()
    if mode == "highest":
        return {level_roles[max(reached)]}
    return {level_roles[lvl] for lvl in reached}


def check_level(level: int) -> None:
    if not 1 <= level <= MAX_LEVEL:
        raise LevelRoleRefused(f"The level must be between 1 and {MAX_LEVEL}, not {level}.")


async def role_config(session: AsyncSession, guild_id: int) -> RoleConfig:
    """The server's level roles, mode and champion role (the defaults for an unknown server)."""
    guild = await session.get(Guild, guild_id)
    rows = await session.execute(
        select(LevelRole.level, LevelRole.role_id).where(LevelRole.guild_id == guild_id)
    )
    mode = _mode(guild.level_role_mode) if guild else "stack"
    return RoleConfig(
        mode=mode,
        level_roles={level: role_id for level, role_id in rows},
        champion_role_id=guild.champion_role_id if guild else None,
    )


@dataclass(frozen=True)
class Added:
    level: int
    role_id: int
    replaced_role_id: int | None  # the role this level gave before, now taken back
    queued: int  # members at the level, queued to get the role (the backfill)


async def add_level_role(
    session: AsyncSession,
    *,
    guild_id: int,
    level: int,
    role_id: int,
    actor_user_id: int,
    now: datetime,
) -> Added:
    """Tie ``role_id`` to ``level`` (replacing the level's role, if any) and queue every member
    it concerns: those at the level, and those holding a replaced role."""
    check_level(level)
    await session.execute(upsert(session, Guild).values(id=guild_id).on_conflict_do_nothing())
    config = await role_config(session, guild_id)
    for other, other_role in config.level_roles.items():
        if other_role == role_id and other != level:
            raise LevelRoleRefused(
                f"<@&{role_id}> is already the role for level {other}: a role can stand for "
                f"one level only. Remove it there first with `/admin roles remove level:{other}`."
            )
    replaced = config.level_roles.get(level)
    if replaced == role_id:
        raise LevelRoleRefused(f"<@&{role_id}> is already the role for level {level}.")
    statement = upsert(session, LevelRole).values(
        guild_id=guild_id, level=level, role_id=role_id, created_at=now
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[LevelRole.guild_id, LevelRole.level],
            set_={"role_id": role_id, "created_at": now},
        )
    )
    levels = {**config.level_roles, level: role_id}
    upper = _next_level(levels, level) if config.mode == "highest" else None
    reached = _members_between(guild_id, level, upper)
    queued = await queue_selected(session, reached, now)
    if replaced is not None:
        await queue_selected(session, _holders(guild_id, replaced), now)
    audit.add(
        session,
        guild_id=guild_id,
        actor_user_id=actor_user_id,
        action="level_role.add",
        target=f"role:{role_id}",
        details={"level": level, "replaced_role_id": replaced},
    )
    return Added(level, role_id, replaced, queued)


@dataclass(frozen=True)
class Removed:
    level: int
    role_id: int
    queued: int  # members the bot gave the role to, queued to have it taken back


async def remove_level_role(
    session: AsyncSession, *, guild_id: int, level: int, actor_user_id: int, now: datetime
) -> Removed:
    """Untie a level's role and queue the members the bot gave it to (it takes it back)."""
    role_id = await session.scalar(
        select(LevelRole.role_id).where(LevelRole.guild_id == guild_id, LevelRole.level == level)
    )
    if role_id is None:
        raise LevelRoleRefused(
            f"Level {level} has no role. `/admin roles list` shows the levels that do."
        )
    await session.execute(
        delete(LevelRole).where(LevelRole.guild_id == guild_id, LevelRole.level == level)
    )
    queued = await queue_selected(session, _holders(guild_id, role_id), now)
    audit.add(
        session,
        guild_id=guild_id,
        actor_user_id=actor_user_id,
        action="level_role.remove",
        target=f"role:{role_id}",
        details={"level": level},
    )
    return Removed(level, role_id, queued)


async def forget_role(session: AsyncSession, *, guild_id: int, role_id: int) -> None:
    """A role Discord no longer has (deleted in the server): drop it from the configuration
    and the grants, so nothing asks for it again."""
    await session.execute(
        delete(LevelRole).where(LevelRole.guild_id == guild_id, LevelRole.role_id == role_id)
    )
    await session.execute(
        delete(RoleGrant).where(RoleGrant.guild_id == guild_id, RoleGrant.role_id == role_id)
    )
    guild = await session.get(Guild, guild_id)
    if guild is not None and guild.champion_role_id == role_id:
        guild.champion_role_id = None
    audit.add(
        session,
        guild_id=guild_id,
        actor_user_id=0,
        action="level_role.forget",
        target=f"role:{role_id}",
        details={"why": "the role no longer exists in Discord (10011 Unknown Role)"},
    )


@dataclass(frozen=True)
class ModeChange:
    old: Mode
    new: Mode
    queued: int


async def set_mode(
    session: AsyncSession, *, guild_id: int, mode: str, actor_user_id: int, now: datetime
) -> ModeChange:
    """Switch between ``stack`` and ``highest``; queues the members who reached two or more
    level roles, the only ones whose roles differ between the two."""
    new = _mode(mode)
    await session.execute(upsert(session, Guild).values(id=guild_id).on_conflict_do_nothing())
    guild = await session.get(Guild, guild_id, populate_existing=True)
    assert guild is not None
    old = _mode(guild.level_role_mode)
    guild.level_role_mode = new
    queued = 0
    levels = sorted((await role_config(session, guild_id)).level_roles)
    if old != new and len(levels) >= 2:
        queued = await queue_selected(session, _members_between(guild_id, levels[1], None), now)
    audit.add(
        session,
        guild_id=guild_id,
        actor_user_id=actor_user_id,
        action="level_role.mode",
        target=f"guild:{guild_id}",
        details={"old": old, "new": new},
    )
    return ModeChange(old, new, queued)


@dataclass(frozen=True)
class ListedRole:
    level: int
    role_id: int
    holders: int  # members the bot has given it to


@dataclass(frozen=True)
class Listing:
    mode: Mode
    roles: tuple[ListedRole, ...]
    waiting: int  # members whose roles are queued for a check
    failing: int  # of them, members whose last try failed
    last_error: str | None  # the reason of the failure retried last


async def list_level_roles(session: AsyncSession, guild_id: int) -> Listing:
    config = await role_config(session, guild_id)
    grants = await session.execute(
        select(RoleGrant.role_id, func.count())
        .where(RoleGrant.guild_id == guild_id)
        .group_by(RoleGrant.role_id)
    )
    counts = {role_id: count for role_id, count in grants}
    roles = tuple(
        ListedRole(level, role_id, counts.get(role_id, 0))
        for level, role_id in sorted(config.level_roles.items())
    )
    waiting, failing = (
        await session.execute(
            select(func.count(), func.count(RoleSync.last_error)).where(
                RoleSync.guild_id == guild_id
            )
        )
    ).one()
    last_error = await session.scalar(
        select(RoleSync.last_error)
        .where(RoleSync.guild_id == guild_id, RoleSync.last_error.is_not(None))
        .order_by(RoleSync.due_at.desc())
        .limit(1)
    )
    return Listing(config.mode, roles, waiting, failing, last_error)


def _mode(value: str) -> Mode:
    if value not in MODES:
        raise LevelRoleRefused(f"The mode must be one of {', '.join(MODES)}, not {value!r}.")
    return value  # type: ignore[return-value]


def _next_level(levels: Mapping[int, int], level: int) -> int | None:
    above = [lvl for lvl in levels if lvl > level]
    return min(above) if above else None


def _members_between(guild_id: int, level: int, below: int | None) -> Select[tuple[int, int]]:
    """Members (not anonymised) at ``level`` or above, and under level ``below`` if given."""
    total = func.coalesce(MemberXp.xp, 0)
    bounds: list[ColumnElement[bool]] = [total >= xp_for_level(level)]
    if below is not None:
        bounds.append(total < xp_for_level(below))
    return (
        select(Member.guild_id, Member.user_id)
        .outerjoin(
            MemberXp,
            (MemberXp.member_id == Member.id)
            & (MemberXp.period_kind == "all")
            & (MemberXp.period_key == ALL_TIME_KEY),
        )
        .where(Member.guild_id == guild_id, Member.anonymised_at.is_(None), *bounds)
    )


def _holders(guild_id: int, role_id: int) -> Select[tuple[int, int]]:
    """The users the bot gave ``role_id`` to."""
    return select(RoleGrant.guild_id, RoleGrant.user_id).where(
        RoleGrant.guild_id == guild_id, RoleGrant.role_id == role_id
    )
