"""Near-copies at settlement (``bot.similarity.near_copies``): a renamed copy of another
member's passing solution is flagged once; a member's own resubmission, a short answer, an
honest different style, a failing copy and another task's copy are not; the listing for
moderators; and ``/privacy delete`` takes the member's fingerprints and pairs."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from sqlalchemy import event, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.models import NearCopy, SolutionFingerprint, Submission
from bot.delivery.outcomes import settle
from bot.progress import privacy
from bot.similarity.fingerprints import THRESHOLD, similarity
from bot.similarity.near_copies import near_copies
from graders.base import Check, Verdict
from tests.graders.catalogue import catalogue_for
from tests.progress.world import GUILD_ID, World
from tests.similarity_catalogue import interface_of, rename_and_reorder
from tests.timeline import now

TASK = "inference-engine/kv-cache-decode"
OTHER_TASK = "transformer-internals/bpe-merge-step"
INTERFACE = interface_of("kv_cache_decode")
CATALOGUE = catalogue_for("kv_cache_decode")
ORIGINAL = CATALOGUE.reference.read_text()
COPY = rename_and_reorder(ORIGINAL, INTERFACE)
#: another correct style, written as its own solution
HONEST = "import torch\n\n" + CATALOGUE.styles[0].code
SHORT = "def decode_step(x, cache, pos):\n    return x\n"
NOW = now()

#: SQLite's query plans and its foreign-key switch: the test runs on SQLite alone (PostgreSQL
#: plans by table size, and its foreign keys cannot be switched off for a session)
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


async def submit(
    world: World,
    member_id: int,
    code: str,
    *,
    status: str = "passed",
    task: str = TASK,
    kind: str = "py",
) -> int:
    """A finished submission of ``code``, settled as the bot settles a build task's verdict."""
    data = code.encode()
    checks = (Check("correct", status == "passed", "ok"),)
    verdict = Verdict(task, status, float(status == "passed"), checks, "")  # type: ignore[arg-type]
    async with world.sessions() as session, session.begin():
        row = Submission(
            guild_id=GUILD_ID,
            member_id=member_id,
            task_ref=task,
            filename=f"solution.{kind}",
            file_kind=kind,
            content=data,
            size_bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            status=status,
            score=verdict.score,
            verdict=verdict.to_json(),
            finished_at=NOW,
        )
        session.add(row)
    async with world.sessions() as session, session.begin():
        assert await settle(session, row.id, 100, NOW, interface=INTERFACE) is not None
    return row.id


async def flags(world: World) -> list[tuple[int, int, int, int, float]]:
    async with world.sessions() as session:
        rows = await session.execute(
            select(
                NearCopy.submission_id,
                NearCopy.member_id,
                NearCopy.earlier_submission_id,
                NearCopy.earlier_member_id,
                NearCopy.score,
            ).order_by(NearCopy.id)
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


async def fingerprinted(world: World) -> dict[int, int]:
    async with world.sessions() as session:
        rows = await session.execute(
            select(SolutionFingerprint.submission_id, func.count()).group_by(
                SolutionFingerprint.submission_id
            )
        )
        return dict(rows.all())  # type: ignore[arg-type]


async def test_a_renamed_copy_by_another_member_is_flagged_once(world: World) -> None:
    ada, bob = await world.member(1, "Ada"), await world.member(2, "Bob")
    first = await submit(world, ada, ORIGINAL)
    second = await submit(world, bob, COPY)
    assert await flags(world) == [(second, bob, first, ada, 1.0)]
    # settled again (a regrade): the same pair, still once
    async with world.sessions() as session, session.begin():
        row = await session.get(Submission, second)
        assert row is not None
        row.settled_at = None
    async with world.sessions() as session, session.begin():
        await settle(session, second, 100, NOW, interface=INTERFACE)
    assert len(await flags(world)) == 1
    assert set(await fingerprinted(world)) == {first, second}


async def test_a_pass_from_before_fingerprints_is_compared_once_a_regrade_settles_it(
    world: World,
) -> None:
    """A pass settled before migration 0013 has no fingerprints: a copy of it is not flagged
    until a regrade settles the original again (as the moderators' docs say)."""
    ada, bob = await world.member(1, "Ada"), await world.member(2, "Bob")
    first = await submit(world, ada, ORIGINAL)
    async with world.sessions() as session, session.begin():  # as if settled before 0013
        await session.execute(
            SolutionFingerprint.__table__.delete().where(SolutionFingerprint.submission_id == first)
        )
    second = await submit(world, bob, COPY)
    assert await flags(world) == []
    async with world.sessions() as session, session.begin():
        row = await session.get(Submission, first)
        assert row is not None
        row.settled_at = None  # what /admin regrade does (bot.intake.regrade)
    async with world.sessions() as session, session.begin():
        await settle(session, first, 100, NOW, interface=INTERFACE)
    assert set(await fingerprinted(world)) == {first, second}
    (flag,) = await flags(world)
    assert {flag[1], flag[3]} == {ada, bob} and flag[4] == 1.0


async def test_the_earlier_submission_is_the_earlier_one_whichever_settles_first(
    world: World,
) -> None:
    ada, bob = await world.member(1, "Ada"), await world.member(2, "Bob")
    first = await submit(world, ada, ORIGINAL, status="failed")  # fails: no fingerprints
    second = await submit(world, bob, COPY)
    assert await flags(world) == []
    async with world.sessions() as session, session.begin():
        row = await session.get(Submission, first)
        assert row is not None
        row.settled_at, row.verdict = None, Verdict(TASK, "passed", 1.0, (), "").to_json()
    async with world.sessions() as session, session.begin():
        await settle(session, first, 100, NOW, interface=INTERFACE)
    assert [f[:4] for f in await flags(world)] == [(second, bob, first, ada)]


async def test_a_copy_with_much_added_is_under_the_threshold_and_not_flagged(
    world: World,
) -> None:
    """Most of it is shared, enough to be a candidate: the score alone keeps it out."""
    extra = "\n\n" + CATALOGUE.styles[1].code.replace("def decode_step", "def decode_again")
    padded = ORIGINAL + extra
    score = similarity(ORIGINAL, padded, INTERFACE)
    assert score is not None and 0.5 < score < THRESHOLD, score
    ada, bob = await world.member(1, "Ada"), await world.member(2, "Bob")
    await submit(world, ada, ORIGINAL)
    await submit(world, bob, padded)
    assert await flags(world) == []


async def test_the_same_member_twice_is_no_pair(world: World) -> None:
    ada = await world.member(1, "Ada")
    await submit(world, ada, ORIGINAL)
    await submit(world, ada, COPY)
    assert await flags(world) == []


async def test_a_short_answer_is_never_fingerprinted_nor_flagged(world: World) -> None:
    ada, bob = await world.member(1, "Ada"), await world.member(2, "Bob")
    await submit(world, ada, SHORT)
    await submit(world, bob, SHORT)
    assert await flags(world) == []
    assert await fingerprinted(world) == {}


async def test_an_honest_different_style_is_not_flagged(world: World) -> None:
    ada, bob = await world.member(1, "Ada"), await world.member(2, "Bob")
    await submit(world, ada, ORIGINAL)
    await submit(world, bob, HONEST)
    assert await flags(world) == []
    assert len(await fingerprinted(world)) == 2


async def test_a_failing_copy_and_another_tasks_copy_are_not_flagged(world: World) -> None:
    ada, bob, cy = [await world.member(i, n) for i, n in ((1, "Ada"), (2, "Bob"), (3, "Cy"))]
    await submit(world, ada, ORIGINAL)
    failing = await submit(world, bob, COPY, status="failed")
    await submit(world, cy, COPY, task=OTHER_TASK)
    assert await flags(world) == []
    assert failing not in await fingerprinted(world)


async def test_a_notebook_copy_is_flagged(world: World) -> None:
    import json

    ada, bob = await world.member(1, "Ada"), await world.member(2, "Bob")
    first = await submit(world, ada, ORIGINAL)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": COPY}
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}
    second = await submit(world, bob, json.dumps(notebook), kind="ipynb")
    assert [f[:3] for f in await flags(world)] == [(second, bob, first)]


@SQLITE_ONLY
async def test_candidates_come_from_the_hash_index(world: World) -> None:
    """The statements that look for pairs read fingerprints only through the (server, task,
    hash) index or the submission's own: no query scans the table."""
    ada, bob = await world.member(1, "Ada"), await world.member(2, "Bob")
    await submit(world, ada, ORIGINAL)
    plans: list[str] = []
    statements: list[tuple[str, tuple[object, ...]]] = []
    engine = world.sessions.kw["bind"]

    def remember(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if "solution_fingerprints" in statement and statement.lstrip().startswith("SELECT"):
            statements.append((statement, parameters))

    event.listen(engine.sync_engine, "before_cursor_execute", remember)
    try:
        await submit(world, bob, COPY)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", remember)
    assert statements
    async with engine.connect() as connection:
        for statement, parameters in statements:
            rows = await connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
            plans.extend(str(row[-1]) for row in rows)
    reads = [p for p in plans if "solution_fingerprints" in p]
    assert reads, plans
    # each read is a search by submission, or by server, task and hash in the covering index
    wide = [
        p
        for p in reads
        if not p.startswith("SEARCH")
        or not (
            "(submission_id=?" in p
            or ("task_ref=? AND hash=?" in p and "USING COVERING INDEX" in p)
        )
    ]
    assert wide == [], plans
    assert any("task_ref=? AND hash=?" in p for p in reads), plans


async def test_the_moderators_list_newest_first_capped(world: World) -> None:
    ada = await world.member(1, "Ada")
    first = await submit(world, ada, ORIGINAL)
    copies = []
    for user in range(2, 6):
        member = await world.member(user, f"Copier {user}")
        copies.append(await submit(world, member, COPY))
    async with world.sessions() as session:
        found = await near_copies(session, guild_id=GUILD_ID, task_ref=TASK, limit=3)
        other = await near_copies(session, guild_id=GUILD_ID, task_ref=OTHER_TASK)
    assert other.pairs == () and other.more == 0
    assert found.more == 7  # ten pairs among the four copies and the original, three shown
    assert all(p.score == 1.0 for p in found.pairs)
    assert found.pairs[0].submission_id == copies[-1]
    names = {p.earlier_member_name for p in found.pairs} | {p.member_name for p in found.pairs}
    assert names <= {"Ada", "Copier 2", "Copier 3", "Copier 4", "Copier 5"}
    async with world.sessions() as session:
        every = await near_copies(session, guild_id=GUILD_ID, task_ref=TASK, limit=100)
    assert len(every.pairs) == 10 and every.more == 0  # five solutions, every pair once
    assert first in {p.earlier_submission_id for p in every.pairs}


async def test_privacy_delete_takes_the_fingerprints_and_every_pair_naming_them(
    world: World,
) -> None:
    ada, bob, cy = [await world.member(i, n) for i, n in ((1, "Ada"), (2, "Bob"), (3, "Cy"))]
    first = await submit(world, ada, ORIGINAL)
    second = await submit(world, bob, COPY)
    third = await submit(world, cy, COPY)
    assert len(await flags(world)) == 3
    async with world.sessions() as session, session.begin():
        await privacy.delete_member_data(
            session, guild_id=GUILD_ID, user_id=2, now=NOW + timedelta(hours=1)
        )
    assert set(await fingerprinted(world)) == {first, third}
    assert [f[:4] for f in await flags(world)] == [(third, cy, first, ada)]
    async with world.sessions() as session:
        left = await session.scalar(
            select(func.count())
            .select_from(SolutionFingerprint)
            .where(SolutionFingerprint.member_id == bob)
        )
    assert left == 0 and second not in await fingerprinted(world)


@SQLITE_ONLY
async def test_privacy_delete_takes_them_outright_not_by_the_cascade(world: World) -> None:
    """As with speed results, the deletion names the fingerprints and pairs itself: with SQLite's
    foreign keys off (no cascade), nothing of the member's is left in either table."""
    engine = world.sessions.kw["bind"]
    ada, bob = await world.member(1, "Ada"), await world.member(2, "Bob")
    await submit(world, ada, ORIGINAL)
    await submit(world, bob, COPY)
    async with engine.connect() as connection:
        driver = (await connection.get_raw_connection()).driver_connection
        async with driver.execute("PRAGMA foreign_keys = OFF"):  # outside any transaction
            pass
        try:
            async with AsyncSession(bind=connection) as session, session.begin():
                await privacy.delete_member_data(session, guild_id=GUILD_ID, user_id=1, now=NOW)
        finally:
            async with driver.execute("PRAGMA foreign_keys = ON"):
                pass
    async with world.sessions() as session:
        members = (await session.execute(select(SolutionFingerprint.member_id))).scalars().all()
        pairs = await session.scalar(select(func.count()).select_from(NearCopy))
    assert set(members) == {bob} and pairs == 0  # Ada was the pair's earlier member
