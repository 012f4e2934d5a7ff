"""Database invariants the rest of the system leans on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError, StatementError
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_sessionmaker
from bot.db.models import Guild, Member, XpEntry


async def _member(engine: AsyncEngine) -> Member:
    async with make_sessionmaker(engine)() as session, session.begin():
        session.add(Guild(id=111))
        member = Member(guild_id=111, user_id=222, display_name="ada")
        session.add(member)
    return member


def _xp(member: Member, key: str, amount: int = 10) -> XpEntry:
    return XpEntry(
        guild_id=member.guild_id,
        member_id=member.id,
        amount=amount,
        reason="test",
        source="admin",
        idempotency_key=key,
    )


async def test_timestamps_are_aware_utc(engine: AsyncEngine) -> None:
    member = await _member(engine)
    paris = timezone(timedelta(hours=1))
    moment = datetime.now(UTC).replace(microsecond=0)
    async with make_sessionmaker(engine)() as session, session.begin():
        entry = _xp(member, "k1")
        entry.created_at = moment.astimezone(paris)  # stored and read back as UTC
        session.add(entry)
    async with make_sessionmaker(engine)() as session:
        loaded = (await session.execute(select(XpEntry))).scalar_one()
        guild = await session.get(Guild, 111)
    assert loaded.created_at == moment
    assert loaded.created_at.tzinfo is UTC
    assert guild is not None and guild.created_at.tzinfo is UTC


async def test_naive_datetime_is_refused(engine: AsyncEngine) -> None:
    member = await _member(engine)
    async with make_sessionmaker(engine)() as session:
        entry = _xp(member, "k1")
        entry.created_at = datetime.now(UTC).replace(tzinfo=None)  # naive: the point of the test
        session.add(entry)
        with pytest.raises(StatementError, match="naive datetime"):
            await session.commit()


async def test_ledger_is_append_only(engine: AsyncEngine) -> None:
    member = await _member(engine)
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        session.add(_xp(member, "k1"))
    for statement in (update(XpEntry).values(amount=999), delete(XpEntry)):
        async with sessions() as session:
            with pytest.raises(IntegrityError, match="append-only"):
                await session.execute(statement)
    async with sessions() as session:
        assert (await session.execute(select(XpEntry.amount))).scalars().all() == [10]


async def test_deleting_a_member_removes_their_ledger(engine: AsyncEngine) -> None:
    member = await _member(engine)
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        session.add(_xp(member, "k1"))
    async with sessions() as session, session.begin():
        await session.execute(delete(Member).where(Member.id == member.id))
    async with sessions() as session:
        assert (await session.execute(select(XpEntry))).first() is None


async def test_an_idempotency_key_is_stored_once(engine: AsyncEngine) -> None:
    """The key the award paths lean on (tests/progress/test_awards.py: each award once)."""
    member = await _member(engine)
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        session.add(_xp(member, "task:go-brrrr/matmul-three-ways:222"))
    async with sessions() as session:
        session.add(_xp(member, "task:go-brrrr/matmul-three-ways:222"))
        with pytest.raises(IntegrityError):
            await session.commit()
