"""Server settings and who may moderate: plain logic, no discord."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.dialect import upsert
from bot.db.models import AuditEntry, Guild
from bot.progress.champions import current_champions
from bot.progress.periods import local_date
from bot.progress.post_times import parse_post_time
from bot.progress.role_queue import queue_users

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


@dataclass(frozen=True)
class SetupChanges:
    """What one ``/admin setup`` changes; ``None`` keeps the current value (or the default)."""

    channel_id: int | None = None
    post_time: str | None = None
    timezone: str | None = None
    weekly_day: int | None = None
    moderator_role_id: int | None = None
    champion_role_id: int | None = None
    discussion_threads: bool | None = None
    web_pages: bool | None = None


class SetupRefused(ValueError):
    """A setup that cannot be stored, with the reason in the member's words."""


async def configure(
    session: AsyncSession,
    *,
    guild_id: int,
    changes: SetupChanges,
    actor_user_id: int,
    now: datetime,
    tz: ZoneInfo,
) -> Guild:
    """Store where and when the server's posts go; validates every field first.

    A server's first setup must name the quest channel; later ones change only what they give.
    """
    if changes.post_time is not None:
        parse_post_time(changes.post_time)
    if changes.timezone is not None:
        parse_timezone(changes.timezone)
    if changes.weekly_day is not None and not 0 <= changes.weekly_day <= 6:
        raise SetupRefused("the weekly day must be Monday to Sunday")
    await session.execute(upsert(session, Guild).values(id=guild_id).on_conflict_do_nothing())
    guild = await session.get(Guild, guild_id, populate_existing=True)
    assert guild is not None
    if changes.channel_id is None and guild.quest_channel_id is None:
        raise SetupRefused("This server has no quest channel yet: give `channel` too.")
    given = {name: value for name, value in asdict(changes).items() if value is not None}
    if given.get("champion_role_id", guild.champion_role_id) != guild.champion_role_id:
        # the holders move to the new role now, not at their next XP change
        await queue_users(session, guild_id, await current_champions(session, guild_id), now=now)
    for name, value in given.items():
        column = _SETUP_COLUMNS[name]
        setattr(guild, column, value.strip() if isinstance(value, str) else value)
    if guild.schedule_start is None:
        guild.schedule_start = local_date(now, tz)
    details: dict[str, Any] = dict(given)
    if "weekly_day" in details:
        details["weekly_day"] = WEEKDAYS[details["weekly_day"]]
    session.add(
        AuditEntry(
            guild_id=guild_id,
            actor_user_id=actor_user_id,
            action="setup",
            target=f"channel:{guild.quest_channel_id}",
            details=details,
        )
    )
    return guild


_SETUP_COLUMNS = {
    "channel_id": "quest_channel_id",
    "post_time": "post_time",
    "timezone": "timezone",
    "weekly_day": "weekly_post_day",
    "moderator_role_id": "moderator_role_id",
    "champion_role_id": "champion_role_id",
    "discussion_threads": "discussion_threads",
    "web_pages": "web_pages",
}


async def with_quest_channel(session: AsyncSession) -> list[Guild]:
    """The servers that have set up a quest channel: the ones scheduled posts go to."""
    query = select(Guild).where(Guild.quest_channel_id.is_not(None)).order_by(Guild.id)
    return list((await session.execute(query)).scalars().all())
