"""Queueing members whose Discord roles may no longer match their XP or titles.

Every change that can move a member's roles (a ledger row, a new or removed level role, a weekly
champion, a deleted member) queues them here in its own transaction, so the role reconciler
(``bot.progress.role_sync``) sees every change once it commits, and a restart loses none.  A
member queued twice is one row: the reconciler always works from the current state.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import Select, exists, func, literal, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.dialect import upsert
from bot.db.models import Guild, LevelRole, Member, RoleSync
from bot.db.types import UTCDateTime


async def queue_users(
    session: AsyncSession, guild_id: int, user_ids: Collection[int], *, now: datetime
) -> None:
    """Queue these users of one server for a role check, due now."""
    if not user_ids:
        return
    rows = [{"guild_id": guild_id, "user_id": user_id, "due_at": now} for user_id in user_ids]
    statement = upsert(session, RoleSync).values(rows)
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[RoleSync.guild_id, RoleSync.user_id],
            set_={"due_at": statement.excluded.due_at, "attempts": 0},
        )
    )


async def queue_member_if_roles(
    session: AsyncSession, guild_id: int, member_id: int, *, now: datetime
) -> None:
    """Queue one member after an XP change, when their server hands out roles at all.

    One INSERT ... SELECT: a server without level or champion roles pays one indexed lookup.
    """
    has_roles = or_(
        exists().where(LevelRole.guild_id == guild_id),
        exists().where(Guild.id == guild_id, Guild.champion_role_id.is_not(None)),
    )
    chosen = select(Member.guild_id, Member.user_id).where(
        Member.id == member_id, Member.anonymised_at.is_(None), has_roles
    )
    await _insert_selected(session, chosen, now)


async def queue_selected(
    session: AsyncSession, users: Select[tuple[int, int]], now: datetime
) -> int:
    """Queue every (guild, user) ``users`` selects, due now, in one statement; how many."""
    count = await session.scalar(select(func.count()).select_from(users.subquery()))
    if not count:
        return 0
    await _insert_selected(session, users, now)
    return int(count)


async def _insert_selected(
    session: AsyncSession, users: Select[tuple[int, int]], now: datetime
) -> None:
    statement = upsert(session, RoleSync).from_select(
        [RoleSync.guild_id, RoleSync.user_id, RoleSync.due_at],
        users.add_columns(literal(now, UTCDateTime())),
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[RoleSync.guild_id, RoleSync.user_id],
            set_={"due_at": statement.excluded.due_at, "attempts": 0},
        )
    )
