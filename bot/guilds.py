"""Server settings and who may moderate: plain logic, no discord."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.dialect import upsert
from bot.db.models import AuditEntry, Guild
from bot.progress.schedule import parse_post_time

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def parse_timezone(name: str) -> ZoneInfo:
    """An IANA zone, or ValueError that says what a valid one looks like."""
    cleaned = name.strip()
    if cleaned not in available_timezones():
        raise ValueError(
            f"{name!r} is not an IANA time zone; use a name like Europe/Berlin, "
            "America/New_York or UTC"
        )
    try:
        return ZoneInfo(cleaned)
    except ZoneInfoNotFoundError as exc:  # pragma: no cover - listed but unloadable
        raise ValueError(f"time zone {name!r} cannot be loaded: {exc}") from None


def is_moderator(*, manage_guild: bool, role_ids: Iterable[int], guild: Guild | None) -> bool:
    """Manage Server, or the server's configured moderator role."""
    if manage_guild:
        return True
    return bool(guild and guild.moderator_role_id and guild.moderator_role_id in set(role_ids))


async def configure(
    session: AsyncSession,
    *,
    guild_id: int,
    channel_id: int,
    post_time: str,
    timezone: str,
    weekly_day: int,
    moderator_role_id: int | None,
    actor_user_id: int,
    today: date,
) -> Guild:
    """Store where and when the server's posts go; validates every field first."""
    parse_post_time(post_time)
    parse_timezone(timezone)
    if not 0 <= weekly_day <= 6:
        raise ValueError("the weekly day must be Monday to Sunday")
    await session.execute(upsert(session, Guild).values(id=guild_id).on_conflict_do_nothing())
    guild = await session.get(Guild, guild_id, populate_existing=True)
    assert guild is not None
    guild.quest_channel_id = channel_id
    guild.post_time = post_time.strip()
    guild.timezone = timezone.strip()
    guild.weekly_post_day = weekly_day
    if moderator_role_id is not None:
        guild.moderator_role_id = moderator_role_id
    if guild.schedule_start is None:
        guild.schedule_start = today
    details: dict[str, Any] = {
        "channel_id": channel_id,
        "time": guild.post_time,
        "timezone": guild.timezone,
        "weekly_day": WEEKDAYS[weekly_day],
        "moderator_role_id": moderator_role_id,
    }
    session.add(
        AuditEntry(
            guild_id=guild_id,
            actor_user_id=actor_user_id,
            action="setup",
            target=f"channel:{channel_id}",
            details=details,
        )
    )
    return guild


async def with_quest_channel(session: AsyncSession) -> list[Guild]:
    """The servers that have set up a quest channel: the ones scheduled posts go to."""
    query = select(Guild).where(Guild.quest_channel_id.is_not(None))
    return list((await session.execute(query)).scalars().all())
