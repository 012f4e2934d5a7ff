"""Moderator XP grants and revokes.

Rules:

- A grant is a ledger row with source ``admin`` plus an ``audit_log`` row (who, whom, how much,
  why), written in the same transaction: there is no XP change without its audit entry.
- A revoke is a grant with a negative amount.  It never takes a member's total below 0: the amount
  is clamped to the current total and the result reports the amount actually applied.
- The idempotency key is ``admin:REQUEST`` with the caller's request id (the Discord interaction
  id), so a retried command changes XP once; the retry reports the original row's amount.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot import audit
from bot.db.models import AuditEntry, XpEntry
from bot.progress.ledger import REASON_CHARS, append
from bot.progress.levels import LevelChange, level_change
from bot.progress.members import ensure_member, lock_member
from bot.progress.totals import total_xp


@dataclass(frozen=True)
class Grant(LevelChange):
    """What a grant did: ``applied`` may be smaller than asked (a clamped revoke)."""

    requested: int
    applied: int
    new_total: int
    repeated: bool  # True when this request id was already applied; nothing changed now


async def grant(
    session: AsyncSession,
    *,
    guild_id: int,
    member_id: int,
    amount: int,
    reason: str,
    actor_user_id: int,
    request_id: int,
    tz: ZoneInfo,
    now: datetime,
) -> Grant:
    """Give (``amount`` > 0) or take away (``amount`` < 0) XP on a moderator's behalf."""
    if amount == 0:
        raise ValueError("a grant of 0 XP changes nothing")
    if not reason.strip() or len(reason) > REASON_CHARS:
        raise ValueError(f"the reason must be 1 to {REASON_CHARS} characters")
    member = await lock_member(session, guild_id, member_id)
    old_total = await total_xp(session, member_id)
    key = f"admin:{request_id}"
    applied = max(amount, -old_total)
    inserted = await append(
        session,
        guild_id=guild_id,
        member_id=member_id,
        amount=applied,
        source="admin",
        reason=reason,
        reference=str(request_id),
        key=key,
        tz=tz,
        now=now,
    )
    if inserted:
        session.add(
            AuditEntry(
                guild_id=guild_id,
                actor_user_id=actor_user_id,
                action="xp.grant" if amount > 0 else "xp.revoke",
                target=audit.user_target(member.user_id),
                details={
                    "member_id": member_id,
                    "requested": amount,
                    "applied": applied,
                    "reason": reason,
                    "request_id": request_id,
                },
                created_at=now,
            )
        )
        await session.flush()
    else:
        original = select(XpEntry.amount).where(XpEntry.idempotency_key == key)
        applied = (await session.execute(original)).scalar_one()
    # A repeat changed nothing now, so it reports no level change (no second level-up line).
    new_total = old_total + applied if inserted else old_total
    levels = level_change(old_total, new_total)
    return Grant(
        old_level=levels.old_level,
        new_level=levels.new_level,
        requested=amount,
        applied=applied,
        new_total=new_total,
        repeated=not inserted,
    )


async def grant_to_user(
    session: AsyncSession,
    *,
    guild_id: int,
    user_id: int,
    display_name: str,
    amount: int,
    reason: str,
    actor_user_id: int,
    request_id: int,
    tz: ZoneInfo,
    now: datetime,
) -> Grant:
    """``grant`` to a Discord user, who becomes a member of the server's board if new."""
    member = await ensure_member(session, guild_id, user_id, display_name)
    return await grant(
        session,
        guild_id=guild_id,
        member_id=member.id,
        amount=amount,
        reason=reason,
        actor_user_id=actor_user_id,
        request_id=request_id,
        tz=tz,
        now=now,
    )
