"""Database invariants the rest of the system leans on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import delete, select, text, update
from sqlalchemy.exc import IntegrityError, StatementError
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_sessionmaker
from bot.db.models import GradingJob, Guild, Member, Submission, XpEntry
from bot.db.states import JobStatus, SubmissionStatus
from tests.support import add_member, queue_submission


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


async def test_states_read_back_as_their_enums_and_no_other_state_is_stored(
    engine: AsyncEngine,
) -> None:
    """The status columns hold the enums' values and return the members; an unknown state is
    refused by the model before the database, and by the database past it (its CHECK)."""
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        await add_member(session)
        submission_id, job_id = await queue_submission(session)
    async with sessions() as session:
        submission = await session.get(Submission, submission_id)
        job = await session.get(GradingJob, job_id)
        stored = (
            await session.execute(
                text(
                    "SELECT s.status, j.status FROM submissions s "
                    "JOIN grading_jobs j ON j.submission_id = s.id"
                )
            )
        ).one()
    assert submission is not None and submission.status is SubmissionStatus.QUEUED
    assert job is not None and job.status is JobStatus.QUEUED
    assert tuple(stored) == ("queued", "queued")  # the value, as before the enums
    async with sessions() as session:
        with pytest.raises(StatementError, match="'shelved' is not among the defined enum"):
            await session.execute(
                update(Submission).where(Submission.id == submission_id).values(status="shelved")
            )
    for table, row_id in (("submissions", submission_id), ("grading_jobs", job_id)):
        async with sessions() as session:
            with pytest.raises(IntegrityError, match=f"ck_{table}_status"):
                await session.execute(
                    text(f"UPDATE {table} SET status = 'shelved' WHERE id = :id"), {"id": row_id}
                )
