"""The audit log: who did what to whom, with the arguments; written beside the change itself."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.db.models import AuditEntry


def user_target(user_id: int) -> str:
    """The target of an action on a Discord user (``bot.progress.privacy`` rewrites it)."""
    return f"user:{user_id}"


def member_target(member_id: int) -> str:
    """The target once the member deleted their data: their anonymised row, not the person."""
    return f"member:{member_id}"


def add(
    session: AsyncSession,
    *,
    guild_id: int,
    actor_user_id: int,
    action: str,
    target: str,
    details: dict[str, Any] | None = None,
) -> None:
    """Record an action in the caller's transaction, so it is logged exactly when it happens."""
    session.add(
        AuditEntry(
            guild_id=guild_id,
            actor_user_id=actor_user_id,
            action=action,
            target=target,
            details=details or {},
        )
    )


async def record(
    sessions: async_sessionmaker[AsyncSession],
    *,
    guild_id: int,
    actor_user_id: int,
    action: str,
    target: str,
    details: dict[str, Any] | None = None,
) -> None:
    """Record an action that wrote nothing else (a post made through Discord) on its own."""
    async with sessions() as session, session.begin():
        add(
            session,
            guild_id=guild_id,
            actor_user_id=actor_user_id,
            action=action,
            target=target,
            details=details,
        )
