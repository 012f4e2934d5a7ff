"""What a server that opted in to web pages shows the public, read from the same domain
functions as the Discord replies.

Rules: a server is public only while ``guilds.web_pages`` is set (``/admin setup web:true``);
a member is public only while listed (not hidden by ``/privacy hide``, not anonymised by
``/privacy delete``).  A member who is not public is looked up exactly like one who does not
exist, so a page cannot tell the two apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy import select, true
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.models import Guild, Member
from bot.progress.level_roles import desired_roles, role_config
from bot.progress.profile import Profile, profile
from bot.progress.speed_results import member_speed_results, stored_figures
from graders.base import SPEED_INSTRUMENT
from graders.bottleneck import RooflineFigures


async def published_guild(session: AsyncSession, guild_id: int) -> Guild | None:
    """The server, if it has opted in to web pages; None for any other (or none)."""
    return await session.scalar(
        select(Guild).where(Guild.id == guild_id, Guild.web_pages == true())
    )


async def listed_member(session: AsyncSession, guild_id: int, user_id: int) -> Member | None:
    """The member with that Discord id in the server, if they are on the public boards.
    (``/privacy delete`` hides the row as it anonymises it, and moves its user id below 0.)"""
    return await session.scalar(
        select(Member).where(
            Member.guild_id == guild_id, Member.user_id == user_id, Member.hidden.is_(False)
        )
    )


@dataclass(frozen=True)
class BestSpeed:
    """A member's best ranked run of one task on one device class."""

    task_ref: str
    device: str
    board_ratio: float  # what ranks
    ratio: float
    learner_s: float
    reference_s: float
    achieved_at: datetime
    figures: RooflineFigures | None
    after_reading: bool = False  # submitted after reading the task's shared solutions


@dataclass(frozen=True)
class MemberPage:
    user_id: int
    display_name: str
    numbers: Profile
    level_roles: tuple[tuple[int, int], ...]  # (level, role id) the member holds, low to high
    speed: tuple[BestSpeed, ...]  # in task ref, then device order


async def member_page(
    session: AsyncSession,
    *,
    guild: Guild,
    user_id: int,
    now: datetime,
    task_refs_by_quest: Mapping[str, tuple[str, ...]],
) -> MemberPage | None:
    """Everything a listed member's page shows: ``/profile``'s numbers, the level roles their
    XP earns, and their best ranked speed run per task and device class; None for anyone who
    is not listed (``listed_member``)."""
    member = await listed_member(session, guild.id, user_id)
    if member is None:
        return None
    numbers = await profile(
        session,
        guild_id=guild.id,
        member_id=member.id,
        tz=ZoneInfo(guild.timezone),
        now=now,
        content_task_refs_by_quest=task_refs_by_quest,
    )
    config = await role_config(session, guild.id)
    held = desired_roles(numbers.total_xp, config.level_roles, config.mode)
    roles = tuple(sorted((lvl, rid) for lvl, rid in config.level_roles.items() if rid in held))
    best: dict[tuple[str, str], BestSpeed] = {}
    for result in await member_speed_results(session, member.id):
        if result.instrument != SPEED_INSTRUMENT:
            continue  # retired: measured by an older instrument, ranks nowhere
        if result.voided_at is not None:
            continue  # voided by a moderator: ranks nowhere
        key = (result.task_ref, result.device)
        # the boards' order (``bot.progress.speed_results``): made before reading first
        if key in best and (best[key].after_reading, -best[key].board_ratio) <= (
            result.after_reading,
            -result.board_ratio,
        ):
            continue
        best[key] = BestSpeed(
            result.task_ref,
            result.device,
            result.board_ratio,
            result.ratio,
            result.learner_s,
            result.reference_s,
            result.recorded_at,
            stored_figures(result),
            result.after_reading,
        )
    return MemberPage(
        member.user_id,
        member.display_name,
        numbers,
        roles,
        tuple(best[key] for key in sorted(best)),
    )
