"""The role reconciler: brings each queued member's Discord roles in line with their standing.

Rules:

- A member's desired roles are their level roles (from all-time XP, ``bot.progress.level_roles``)
  plus the champion role while they are a current champion (``bot.progress.champions``).  A user
  with no member row, or an anonymised one, desires none: the roles the bot gave are taken back.
- The bot only ever takes back roles it gave (``role_grants``); roles people hand out by hand
  are not its business.
- Queued members (``role_sync_queue``) are taken in ``due_at`` order.  Each is leased first
  (``due_at`` moved ``LEASE`` ahead), so a crashed pass is retried when the lease ends; after the
  writes the row is deleted only if it still holds that lease, so a change that queued the member
  again meanwhile is synced again, never lost.
- Writes go to Discord one at a time: Discord rate-limits role writes per server, and the
  transport (discord.py) waits on 429s itself.
- Failures stay with their member: a refusal (50013 Missing Permissions) or any other failure
  keeps the row, retried after ``FIRST_RETRY`` doubling up to ``MAX_RETRY`` (``RETRIES``), with
  the reason for ``/admin roles list``; after one refusal of a role in a pass, the other members
  needing that role wait without asking Discord again (refusals count towards Discord's
  invalid-request ban).
  A member who left the server (10007) loses their grants and their row; a role deleted in
  Discord (10011) is dropped from the configuration.  One bad member never blocks the rest.
- A user with no member row left (``/privacy delete``) is in the database only through their
  grants and queue row, until their roles are taken back: once a pass has settled such a user,
  it empties SQLite's write-ahead log (``checkpoint_wal``), whose old page images still hold
  their id.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy import ColumnElement, delete, func, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot import clock
from bot.background import RetryPolicy
from bot.db.dialect import upsert
from bot.db.engine import checkpoint_wal
from bot.db.models import Member, MemberXp, RoleGrant, RoleSync
from bot.progress.champions import current_champions
from bot.progress.level_roles import RoleConfig, desired_roles, forget_role, role_config
from bot.progress.levels import level_for
from bot.progress.totals import ALL_TIME_KEY

log = logging.getLogger(__name__)

BATCH = 50  # members claimed per transaction
LEASE = timedelta(minutes=5)
FIRST_RETRY = timedelta(minutes=1)
MAX_RETRY = timedelta(hours=1)
#: a member whose writes failed waits 1 min, doubling to 1 h while they keep failing
RETRIES = RetryPolicy(FIRST_RETRY.total_seconds(), MAX_RETRY.total_seconds())
WRITE_TIMEOUT_S = 120.0  # one write, rate-limit waits included; longer is a failed try
MISSING_PERMISSIONS = 50013


class RoleWriteError(Exception):
    """A role write Discord did not make."""


class RoleWriteRefused(RoleWriteError):
    """Discord refused the write (403): ``code`` 50013 is missing permissions or hierarchy."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(f"{code} {text}")
        self.code = code
        self.text = text


class UnknownMember(RoleWriteError):
    """The user is no longer in the server (10007)."""


class UnknownRole(RoleWriteError):
    """The role no longer exists in the server (10011)."""


class RoleTransport(Protocol):
    """One role write on Discord; raises a ``RoleWriteError`` for Discord's known refusals."""

    async def add(self, guild_id: int, user_id: int, role_id: int, reason: str) -> None: ...

    async def remove(self, guild_id: int, user_id: int, role_id: int, reason: str) -> None: ...


class Store(Protocol):
    """What the reconciler needs of ``bot.services.Services``."""

    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]


@dataclass
class DrainResult:
    synced: int = 0  # members brought in line
    added: int = 0
    removed: int = 0
    failed: int = 0  # members left queued for a retry
    forgotten: int = 0  # of the synced, users with no member row: the last of them went


@dataclass(frozen=True)
class _Claim:
    """One leased member and what their roles should be."""

    guild_id: int
    user_id: int
    lease: datetime
    attempts: int
    desired: frozenset[int]
    granted: frozenset[int]
    level: int
    config: RoleConfig
    member: bool  # False: no member row names the user (never a member, or deleted)


@dataclass
class _Pass:
    """What one ``drain`` learnt about Discord: roles it refused, by (guild, role)."""

    refused: dict[tuple[int, int], str] = field(default_factory=dict)


async def drain(
    store: Store,
    transport: RoleTransport,
    *,
    now: Callable[[], datetime] = clock.now,
    limit: int = 1000,
) -> DrainResult:
    """Sync up to ``limit`` due members, in due order; raises only if the database fails."""
    result = DrainResult()
    learnt = _Pass()
    while limit > 0:
        claims = await _claim(store.sessions, now(), min(BATCH, limit))
        if not claims:
            break
        limit -= len(claims)
        for claim in claims:
            try:
                await _sync(store.sessions, transport, claim, learnt, now, result)
            except Exception:
                result.failed += 1
                log.exception(
                    "guild %d: role sync of user %d failed; retried when its lease ends",
                    claim.guild_id,
                    claim.user_id,
                )
    if result.forgotten and await checkpoint_wal(store.engine) is False:
        log.warning(
            "role sync: a reader kept the WAL from being emptied; the old page images of "
            "deleted members' roles stay there until SQLite writes over them"
        )
    return result


async def _claim(
    sessions: async_sessionmaker[AsyncSession], now: datetime, limit: int
) -> list[_Claim]:
    """Lease the next due members and read what their roles should be, in one transaction."""
    async with sessions() as session, session.begin():
        due = (
            await session.execute(
                select(RoleSync.guild_id, RoleSync.user_id, RoleSync.attempts)
                .where(RoleSync.due_at <= now)
                .order_by(RoleSync.due_at, RoleSync.guild_id, RoleSync.user_id)
                .limit(limit)
            )
        ).all()
        if not due:
            return []
        keys = [(guild_id, user_id) for guild_id, user_id, _ in due]
        lease = now + LEASE
        await session.execute(
            update(RoleSync)
            .where(tuple_(RoleSync.guild_id, RoleSync.user_id).in_(keys))
            .values(due_at=lease)
        )
        totals = await _totals(session, keys)
        granted = await _granted(session, keys)
        configs: dict[int, RoleConfig] = {}
        champions: dict[int, set[int]] = {}
        for guild_id in {guild_id for guild_id, _ in keys}:
            configs[guild_id] = await role_config(session, guild_id)
            champions[guild_id] = await current_champions(session, guild_id)
    claims = []
    for guild_id, user_id, attempts in due:
        config = configs[guild_id]
        total = totals.get((guild_id, user_id))
        desired: set[int] = set()
        if total is not None:
            desired = desired_roles(total, config.level_roles, config.mode)
            if config.champion_role_id and user_id in champions[guild_id]:
                desired.add(config.champion_role_id)
        claims.append(
            _Claim(
                guild_id,
                user_id,
                lease,
                attempts,
                frozenset(desired),
                frozenset(granted.get((guild_id, user_id), ())),
                level_for(total or 0),
                config,
                total is not None,
            )
        )
    return claims


async def _totals(session: AsyncSession, keys: list[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """All-time XP of the members among ``keys`` (users without a member row are absent)."""
    rows = await session.execute(
        select(Member.guild_id, Member.user_id, func.coalesce(MemberXp.xp, 0))
        .outerjoin(
            MemberXp,
            (MemberXp.member_id == Member.id)
            & (MemberXp.period_kind == "all")
            & (MemberXp.period_key == ALL_TIME_KEY),
        )
        .where(tuple_(Member.guild_id, Member.user_id).in_(keys), Member.anonymised_at.is_(None))
    )
    return {(guild_id, user_id): xp for guild_id, user_id, xp in rows}


async def _granted(
    session: AsyncSession, keys: list[tuple[int, int]]
) -> dict[tuple[int, int], set[int]]:
    rows = await session.execute(
        select(RoleGrant.guild_id, RoleGrant.user_id, RoleGrant.role_id).where(
            tuple_(RoleGrant.guild_id, RoleGrant.user_id).in_(keys)
        )
    )
    granted: dict[tuple[int, int], set[int]] = {}
    for guild_id, user_id, role_id in rows:
        granted.setdefault((guild_id, user_id), set()).add(role_id)
    return granted


async def _sync(
    sessions: async_sessionmaker[AsyncSession],
    transport: RoleTransport,
    claim: _Claim,
    learnt: _Pass,
    now: Callable[[], datetime],
    result: DrainResult,
) -> None:
    """Make one member's writes, then record them and settle their queue row."""
    added: list[int] = []
    removed: list[int] = []
    problem: str | None = None
    again = False  # a role vanished from Discord: sync this member again without it
    writes = [(role, True) for role in sorted(claim.desired - claim.granted)]
    writes += [(role, False) for role in sorted(claim.granted - claim.desired)]
    for role_id, giving in writes:
        known = learnt.refused.get((claim.guild_id, role_id))
        if known is not None:
            problem = known
            continue
        try:
            async with asyncio.timeout(WRITE_TIMEOUT_S):
                if giving:
                    await transport.add(
                        claim.guild_id, claim.user_id, role_id, _why_add(role_id, claim)
                    )
                else:
                    await transport.remove(
                        claim.guild_id, claim.user_id, role_id, _why_remove(role_id, claim)
                    )
        except UnknownMember:
            await _forget_member(sessions, claim)
            result.synced += 1
            if not claim.member:
                result.forgotten += 1
            return
        except UnknownRole:
            log.warning(
                "guild %d: role %d no longer exists; dropping it from the level roles",
                claim.guild_id,
                role_id,
            )
            async with sessions() as session, session.begin():
                await forget_role(session, guild_id=claim.guild_id, role_id=role_id)
            again = True
            continue
        except RoleWriteRefused as exc:
            problem = _refusal(exc, role_id, giving)
            learnt.refused[(claim.guild_id, role_id)] = problem
            log.warning("guild %d: role %d: %s", claim.guild_id, role_id, exc)
            continue
        except Exception as exc:
            action = "giving" if giving else "taking back"
            problem = f"{action} <@&{role_id}> failed: {type(exc).__name__}: {exc}"
            continue
        (added if giving else removed).append(role_id)
    async with sessions() as session, session.begin():
        await _record(session, claim, added, removed, now())
        await _settle(session, claim, problem, again, now())
    result.added += len(added)
    result.removed += len(removed)
    if problem is None:
        result.synced += 1
        if not claim.member and not again:
            result.forgotten += 1
    else:
        result.failed += 1


async def _record(
    session: AsyncSession, claim: _Claim, added: list[int], removed: list[int], now: datetime
) -> None:
    if added:
        await session.execute(
            upsert(session, RoleGrant)
            .values(
                [
                    {
                        "guild_id": claim.guild_id,
                        "user_id": claim.user_id,
                        "role_id": role_id,
                        "granted_at": now,
                    }
                    for role_id in added
                ]
            )
            .on_conflict_do_nothing()
        )
    if removed:
        await session.execute(
            delete(RoleGrant).where(*_grants_of(claim), RoleGrant.role_id.in_(removed))
        )


async def _settle(
    session: AsyncSession, claim: _Claim, problem: str | None, again: bool, now: datetime
) -> None:
    """Delete the row, or keep it for a retry; only while it still holds this pass's lease."""
    leased = (
        RoleSync.guild_id == claim.guild_id,
        RoleSync.user_id == claim.user_id,
        RoleSync.due_at == claim.lease,
    )
    if problem is not None:
        await session.execute(
            update(RoleSync)
            .where(*leased)
            .values(
                attempts=RoleSync.attempts + 1,
                due_at=now + retry_delay(claim.attempts),
                last_error=problem,
            )
        )
    elif again:
        await session.execute(update(RoleSync).where(*leased).values(due_at=now))
    else:
        await session.execute(delete(RoleSync).where(*leased))


def retry_delay(attempts: int) -> timedelta:
    """How long a member waits after ``attempts + 1`` failed tries in a row."""
    return RETRIES.delay(attempts + 1)


async def _forget_member(sessions: async_sessionmaker[AsyncSession], claim: _Claim) -> None:
    """The user left the server: Discord dropped their roles, so forget the grants and row."""
    async with sessions() as session, session.begin():
        await session.execute(delete(RoleGrant).where(*_grants_of(claim)))
        await session.execute(
            delete(RoleSync).where(
                RoleSync.guild_id == claim.guild_id,
                RoleSync.user_id == claim.user_id,
                RoleSync.due_at == claim.lease,
            )
        )


def _grants_of(claim: _Claim) -> tuple[ColumnElement[bool], ...]:
    return (RoleGrant.guild_id == claim.guild_id, RoleGrant.user_id == claim.user_id)


def _refusal(exc: RoleWriteRefused, role_id: int, giving: bool) -> str:
    """The reason moderators see in ``/admin roles list``."""
    verb = "give" if giving else "take back"
    text = exc.text or "refused"
    if exc.code == MISSING_PERMISSIONS:
        return (
            f"Discord refused to {verb} <@&{role_id}>: {text} — give me Manage Roles and move "
            "my role above it in Server Settings → Roles."
        )
    return f"Discord refused to {verb} <@&{role_id}>: {text} (code {exc.code})."


def _level_of(role_id: int, config: RoleConfig) -> int | None:
    return next((lvl for lvl, role in config.level_roles.items() if role == role_id), None)


def _why_add(role_id: int, claim: _Claim) -> str:
    """The reason Discord's audit log shows for a role the bot gives."""
    level = _level_of(role_id, claim.config)
    if level is not None:
        return f"reached level {level}"
    return "weekly champion"


def _why_remove(role_id: int, claim: _Claim) -> str:
    level = _level_of(role_id, claim.config)
    if role_id == claim.config.champion_role_id and level is None:
        return "no longer the weekly champion"
    if level is None:
        return "no longer a level role"
    if claim.level >= level:
        return "a higher level role replaces it"
    return f"below level {level}"
