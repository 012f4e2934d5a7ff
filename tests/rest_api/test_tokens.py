"""Personal API tokens in-process: issue, replace, revoke, authenticate, per server."""

from __future__ import annotations

import hashlib
import random
import sys
from datetime import timedelta

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot import clock
from bot.db.engine import make_sessionmaker
from bot.db.models import ApiToken, AuditEntry, Member
from bot.rest_api import tokens
from bot.rest_api.status import NotFound, NotYours, submission_status
from bot.rest_api.tokens import Caller, TokenRefused
from tests.support import GUILD_ID, add_member, queue_submission

OTHER_GUILD = 2**62 + 12345  # a snowflake-sized id
USER = 10  # tests.support.add_member's member 1
MODERATOR = 2**61 + 777
BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


@pytest.fixture
def sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return make_sessionmaker(engine)


async def _issue(sessions: async_sessionmaker[AsyncSession], guild_id: int, user_id: int) -> str:
    async with sessions() as session, session.begin():
        return await tokens.issue(session, guild_id, user_id, f"user{user_id}", clock.now())


async def _auth(sessions: async_sessionmaker[AsyncSession], token: str) -> Caller:
    async with sessions() as session, session.begin():
        return await tokens.authenticate(session, token, clock.now())


async def _revoke(sessions: async_sessionmaker[AsyncSession], guild_id: int, user_id: int) -> bool:
    async with sessions() as session, session.begin():
        return await tokens.revoke(session, guild_id, user_id, clock.now())


async def test_a_token_names_its_server_and_only_its_hash_is_stored(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    token = await _issue(sessions, OTHER_GUILD, 7)
    assert token.startswith(f"brrr_{tokens.to_base36(OTHER_GUILD)}_")
    assert tokens.token_guild(token) == OTHER_GUILD
    assert len(token.split("_", 2)[2]) == 43  # 256 random bits, URL-safe base64
    assert await _auth(sessions, token) == Caller(OTHER_GUILD, 7, "user7")
    async with sessions() as session:
        (row,) = (await session.scalars(select(ApiToken))).all()
        (stored,) = (await session.execute(text("SELECT * FROM api_tokens"))).all()
        names = (await session.scalars(select(Member.display_name))).all()
    assert row.token_sha256 == hashlib.sha256(token.encode()).hexdigest()
    secret = token.split("_", 2)[2]
    assert [value for value in stored if secret in str(value)] == []  # every column, raw
    assert row.last_used_at is not None and row.last_used_at.tzinfo is not None
    assert names == ["user7"]  # /token new makes the caller a member


async def test_a_new_token_replaces_the_old_and_revoke_ends_it(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    old = await _issue(sessions, GUILD_ID, USER)
    new = await _issue(sessions, GUILD_ID, USER)
    assert new != old
    with pytest.raises(TokenRefused, match="unknown token"):
        await _auth(sessions, old)
    assert (await _auth(sessions, new)).user_id == USER
    assert await _revoke(sessions, GUILD_ID, USER)
    assert not await _revoke(sessions, GUILD_ID, USER)  # nothing live left
    with pytest.raises(TokenRefused, match="revoked"):
        await _auth(sessions, new)
    again = await _issue(sessions, GUILD_ID, USER)  # and /token new works after a revoke
    assert (await _auth(sessions, again)).guild_id == GUILD_ID


async def test_a_moderators_revoke_is_audited_with_it(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    token = await _issue(sessions, GUILD_ID, USER)
    revoked: list[bool] = []
    audited: list[list[tuple[int, str, str | None]]] = []
    for _ in range(2):  # the second finds nothing live: no change, no audit row
        async with sessions() as session, session.begin():
            revoked.append(
                await tokens.revoke_for_moderator(
                    session, GUILD_ID, USER, actor_user_id=MODERATOR, now=clock.now()
                )
            )
        async with sessions() as session:
            rows = await session.execute(
                select(AuditEntry.actor_user_id, AuditEntry.action, AuditEntry.target)
            )
            audited.append([tuple(row) for row in rows])
    assert revoked == [True, False]
    # audited by the revoke itself, not by the call that found nothing
    assert audited == [[(MODERATOR, "token-revoke", f"user:{USER}")]] * 2
    with pytest.raises(TokenRefused, match="revoked"):
        await _auth(sessions, token)


async def test_each_member_of_each_server_has_their_own_token(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    here = await _issue(sessions, GUILD_ID, USER)
    there = await _issue(sessions, OTHER_GUILD, USER)
    assert (await _auth(sessions, here)).guild_id == GUILD_ID
    assert (await _auth(sessions, there)).guild_id == OTHER_GUILD
    assert await _revoke(sessions, OTHER_GUILD, USER)
    assert (await _auth(sessions, here)).guild_id == GUILD_ID  # the other server's stays


@pytest.mark.parametrize(
    "token",
    ["", "brrr", "brrr__abc", "brrr_1_", "bearer_1_abc", "brrr_ZZ!_abc", "brrr_1_" + "x" * 43],
)
async def test_malformed_or_unknown_tokens_are_refused(
    sessions: async_sessionmaker[AsyncSession], token: str
) -> None:
    with pytest.raises(TokenRefused):
        await _auth(sessions, token)


@pytest.mark.parametrize(
    ("server_digits", "secret"),
    [(5000, "x"), (5000, "a" * 43), (14, "a" * 43), (1, "a" * 42), (1, "a" * 44)],
)
async def test_an_oversized_part_is_refused_before_it_is_parsed(
    sessions: async_sessionmaker[AsyncSession], server_digits: int, secret: str
) -> None:
    """A snowflake is below 2**64 (13 base-36 digits) and a secret is 43 characters: anything
    longer is not a token, however it would parse (past 4300 digits ``int`` refuses it)."""
    server = "".join(random.choices(BASE36, k=server_digits - 1)) + "z"  # no leading zeros
    if server_digits > sys.get_int_max_str_digits():
        with pytest.raises(ValueError, match="digits"):
            int(server, 36)
    print(f"ATTACK: a token with a {server_digits}-digit server part, a {len(secret)}-char secret")
    with pytest.raises(TokenRefused, match="not a brrrbot API token"):
        await _auth(sessions, f"brrr_{server}_{secret}")


async def test_an_empty_server_part_is_refused_as_not_a_token(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    """Shaped like a token but for the server part: ``int("", 36)`` would raise ValueError (a
    500), so the empty part is refused before it is parsed."""
    with pytest.raises(TokenRefused) as refused:
        await _auth(sessions, "brrr__" + "a" * 43)
    assert str(refused.value) == "this is not a brrrbot API token; get one with /token new"


def test_the_largest_snowflake_fits_a_token() -> None:
    largest = 2**64 - 1
    digits = "3w5e11264sgsf"  # 2**64 - 1 in base 36, written out
    assert int(digits, 36) == largest
    assert tokens.token_guild(f"brrr_{digits}_{'a' * 43}") == largest


async def test_a_token_edited_to_name_another_server_is_unknown(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    token = await _issue(sessions, GUILD_ID, USER)
    secret = token.split("_", 2)[2]
    with pytest.raises(TokenRefused, match="unknown token"):
        await _auth(sessions, f"brrr_{tokens.to_base36(OTHER_GUILD)}_{secret}")


async def test_a_stored_hash_of_a_token_naming_another_server_is_refused(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    """The row found by hash must belong to the server the token names: a row whose hash
    matches a token naming another server (a row written by hand, say) lets nobody in."""
    issued = await _issue(sessions, OTHER_GUILD, USER)
    forged = f"brrr_{tokens.to_base36(GUILD_ID)}_{issued.split('_', 2)[2]}"
    async with sessions() as session, session.begin():
        row = await session.get(ApiToken, (OTHER_GUILD, USER))
        assert row is not None
        row.token_sha256 = hashlib.sha256(forged.encode()).hexdigest()
    with pytest.raises(TokenRefused) as refused:
        await _auth(sessions, forged)
    assert str(refused.value) == "unknown token; get a new one with /token new"


async def test_status_is_the_callers_own_submission_only(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions() as session, session.begin():
        await add_member(session)
        submission_id, _ = await queue_submission(session)
    owner = Caller(GUILD_ID, USER)
    async with sessions() as session:
        status = await submission_status(session, owner, submission_id)
        assert (status.id, status.status, status.verdict, status.award) == (
            submission_id,
            "queued",
            None,
            None,
        )
        assert clock.now() - status.created_at < timedelta(minutes=5)
        with pytest.raises(NotYours):
            await submission_status(session, Caller(GUILD_ID, USER + 1), submission_id)
        with pytest.raises(NotYours):
            await submission_status(session, Caller(OTHER_GUILD, USER), submission_id)
        with pytest.raises(NotFound):
            await submission_status(session, owner, submission_id + 1000)
