"""Members and their guild rows, created on first sight."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.dialect import upsert
from bot.db.models import Guild, Member

NAME_CHARS = 100  # members.display_name


async def ensure_member(
    session: AsyncSession, guild_id: int, user_id: int, display_name: str
) -> Member:
    """The member for ``user_id`` in ``guild_id``, creating both rows if needed.

    The display name is refreshed each time, because leaderboards show the current one.  Both
    inserts are ON CONFLICT, so two commands from a new member at once cannot collide.
    """
    name = display_name[:NAME_CHARS]
    await session.execute(upsert(session, Guild).values(id=guild_id).on_conflict_do_nothing())
    statement = upsert(session, Member).values(
        guild_id=guild_id, user_id=user_id, display_name=name
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[Member.guild_id, Member.user_id],
            set_={"display_name": statement.excluded.display_name},
        )
    )
    query = select(Member).where(Member.guild_id == guild_id, Member.user_id == user_id)
    return (await session.execute(query.execution_options(populate_existing=True))).scalar_one()


async def lock_member(session: AsyncSession, guild_id: int, member_id: int) -> Member:
    """Load the member and, on PostgreSQL, lock its row until the transaction ends.

    Every XP change for one member reads a total and then writes, so changes for the same member
    must not interleave.  SQLite needs no row lock: the engine takes the database write lock at
    BEGIN (``BEGIN IMMEDIATE``), which serialises writers already.
    """
    query = (
        select(Member)
        .where(Member.id == member_id, Member.guild_id == guild_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    member = (await session.execute(query)).scalar_one_or_none()
    if member is None:
        raise LookupError(f"member {member_id} is not in guild {guild_id}")
    return member


async def find_member_id(session: AsyncSession, guild_id: int, user_id: int) -> int | None:
    """The member row of ``user_id`` in ``guild_id``, if they have one (without creating it)."""
    return await session.scalar(
        select(Member.id).where(Member.guild_id == guild_id, Member.user_id == user_id)
    )
