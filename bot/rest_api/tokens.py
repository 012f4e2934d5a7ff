"""Personal API tokens: issue (replacing the old one), revoke, and authenticate.

A token reads ``brrr_<server id in base 36>_<secret>``: it names its server, so a request
needs no other header to say where it belongs, and a leaked token is easy to recognise.  The
secret is 256 random bits; only the SHA-256 of the whole token is stored, and a plain hash is
enough because there is no dictionary to try against a random secret (a slow password hash
would only slow every request).  The server id is covered by the hash, so editing it in a
token yields an unknown token.

Anything else in the header is an attacker's to choose, so each part is capped before it is
parsed: a server part of thousands of digits would make ``int`` refuse it (Python's limit on
the length of an integer string) with an exception the API would answer with a 500.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot import audit
from bot.db.dialect import upsert
from bot.db.models import ApiToken, Member
from bot.progress.members import ensure_member

PREFIX = "brrr"
SECRET_BYTES = 32
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
#: a snowflake is below 2**64, which is 13 base-36 digits ("3w5e11264sgsf")
GUILD_DIGITS = 13
#: ``secrets.token_urlsafe(SECRET_BYTES)``: unpadded URL-safe base64, 4 characters per 3 bytes
SECRET_CHARS = -(-SECRET_BYTES * 4 // 3)
NOT_OURS = "this is not a brrrbot API token; get one with /token new"


class TokenRefused(Exception):
    """The request's token cannot be used; ``str(exc)`` says why, for the caller."""


@dataclass(frozen=True)
class Caller:
    """Who a valid token belongs to (the name the server last knew them by)."""

    guild_id: int
    user_id: int
    display_name: str = ""


def to_base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = _DIGITS[digit] + digits
        if number == 0:
            return digits


def token_guild(token: str) -> int:
    """The server a token names; TokenRefused when it is not shaped like one of ours."""
    prefix, _, rest = token.partition("_")
    guild, _, secret = rest.partition("_")
    if (
        prefix != PREFIX
        or not 0 < len(guild) <= GUILD_DIGITS
        or len(secret) != SECRET_CHARS
        or guild.strip(_DIGITS)
    ):
        raise TokenRefused(NOT_OURS)
    return int(guild, 36)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def issue(
    session: AsyncSession, guild_id: int, user_id: int, display_name: str, now: datetime
) -> str:
    """A new token for the member, replacing (and so revoking) any older one; shown once."""
    token = f"{PREFIX}_{to_base36(guild_id)}_{secrets.token_urlsafe(SECRET_BYTES)}"
    await ensure_member(session, guild_id, user_id, display_name)
    statement = upsert(session, ApiToken).values(
        guild_id=guild_id, user_id=user_id, token_sha256=digest(token), created_at=now
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[ApiToken.guild_id, ApiToken.user_id],
            set_={
                "token_sha256": statement.excluded.token_sha256,
                "created_at": now,
                "revoked_at": None,
                "last_used_at": None,
            },
        )
    )
    return token


async def revoke(session: AsyncSession, guild_id: int, user_id: int, now: datetime) -> bool:
    """Revoke the member's live token; False when they had none."""
    result = await session.execute(
        update(ApiToken)
        .where(
            ApiToken.guild_id == guild_id,
            ApiToken.user_id == user_id,
            ApiToken.revoked_at.is_(None),
        )
        .values(revoked_at=now)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def revoke_for_moderator(
    session: AsyncSession, guild_id: int, user_id: int, *, actor_user_id: int, now: datetime
) -> bool:
    """``revoke`` on a moderator's behalf (``/admin token-revoke``), audited with it."""
    revoked = await revoke(session, guild_id, user_id, now)
    if revoked:
        audit.add(
            session,
            guild_id=guild_id,
            actor_user_id=actor_user_id,
            action="token-revoke",
            target=audit.user_target(user_id),
        )
    return revoked


async def authenticate(session: AsyncSession, token: str, now: datetime) -> Caller:
    """The member a live token belongs to (and stamp its use), or TokenRefused."""
    guild_id = token_guild(token)
    hashed = digest(token)
    found = (
        await session.execute(
            select(ApiToken, Member.display_name)
            .outerjoin(
                Member,
                (Member.guild_id == ApiToken.guild_id) & (Member.user_id == ApiToken.user_id),
            )
            .where(ApiToken.token_sha256 == hashed)
        )
    ).first()
    row, name = found if found is not None else (None, None)
    # The lookup is by hash, so timing says nothing about the secret; compare again anyway in
    # constant time, and check the server the token names is the one it was issued for.
    if row is None or not hmac.compare_digest(row.token_sha256, hashed) or row.guild_id != guild_id:
        raise TokenRefused("unknown token; get a new one with /token new")
    if row.revoked_at is not None:
        raise TokenRefused("this token was revoked; get a new one with /token new")
    row.last_used_at = now
    return Caller(row.guild_id, row.user_id, name or "")
