"""Privacy: hidden members leave the boards (ranks close up), export is complete, delete is
real (the code leaves the database file) and anonymises what the append-only ledger keeps."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime, time, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db import migrate
from bot.db.engine import checkpoint_wal, make_engine, make_sessionmaker, sqlite_path
from bot.db.models import (
    ApiToken,
    AuditEntry,
    GradingJob,
    Member,
    MemberXp,
    RoleSync,
    Submission,
    WeeklyChampion,
)
from bot.progress import privacy
from bot.progress.awards import award_verdict
from bot.progress.champions import NOBODY
from bot.progress.highlights import weekly_highlights
from bot.progress.leaderboard import Page, leaderboard, rank_of
from bot.progress.periods import week_key, week_of
from bot.progress.profile import profile
from bot.progress.totals import Board, rebuild_totals
from bot.rest_api import tokens
from tests import timeline
from tests.progress.world import BERLIN, GUILD_ID, World, totals_from_ledger

#: the Monday of a week after the real now, and noon on its Wednesday in Berlin
MONDAY = timeline.monday_after(timeline.now()).date()
NOW = timeline.local(MONDAY + timedelta(days=2), time(12, 0), BERLIN)
#: a user id long enough that finding its digits by chance in an audit row is out of the question
ADA_USER = 987_654_321_012_345_678
ListedRow = tuple[int, str, str, int, datetime, bool]


async def board(world: World, period: Board = "all", caller: int | None = None) -> Page:
    async with world.sessions() as session:
        return await leaderboard(
            session,
            guild_id=GUILD_ID,
            period=period,
            page=1,
            tz=BERLIN,
            now=NOW,
            caller_member_id=caller,
        )


def places(page: Page) -> list[tuple[int, int, int]]:
    return [(e.rank, e.member_id, e.xp) for e in page.entries]


async def hide(world: World, user_id: int, name: str | None = None) -> bool:
    async with world.sessions() as session, session.begin():
        return await privacy.hide(
            session, guild_id=GUILD_ID, user_id=user_id, display_name=name or f"user{user_id}"
        )


async def show(world: World, user_id: int) -> bool:
    async with world.sessions() as session, session.begin():
        return await privacy.show(session, guild_id=GUILD_ID, user_id=user_id)


async def delete(world: World, user_id: int, now: datetime = NOW) -> privacy.Deletion:
    async with world.sessions() as session, session.begin():
        return await privacy.delete_member_data(
            session, guild_id=GUILD_ID, user_id=user_id, now=now
        )


async def export(world: World, user_id: int) -> privacy.MemberExport | None:
    async with world.sessions() as session:
        return await privacy.export(session, guild_id=GUILD_ID, user_id=user_id, now=NOW)


async def submit(world: World, member_id: int, code: bytes, *, task: str = "q1/build") -> int:
    """A stored submission and its grading job (which carries the prepared source, as intake
    stores it); returns the submission id."""
    async with world.sessions() as session, session.begin():
        submission = Submission(
            guild_id=GUILD_ID,
            member_id=member_id,
            task_ref=task,
            filename="solution.py",
            file_kind="py",
            content=code,
            size_bytes=len(code),
            sha256=hashlib.sha256(code).hexdigest(),
            status="passed",
            score=1.0,
            verdict={"status": "passed", "feedback": "all checks passed"},
            created_at=NOW,
        )
        session.add(submission)
        await session.flush()
        session.add(
            GradingJob(
                submission_id=submission.id,
                status="done",
                attempts=1,
                spec={"grader": "matmul", "source": code.decode()},
                created_at=NOW,
            )
        )
    return submission.id


async def listed_totals(world: World) -> set[ListedRow]:
    query = select(
        MemberXp.member_id,
        MemberXp.period_kind,
        MemberXp.period_key,
        MemberXp.xp,
        MemberXp.reached_at,
        MemberXp.listed,
    )
    async with world.sessions() as session:
        return {tuple(row) for row in await session.execute(query)}


def listed_buckets(totals: set[ListedRow]) -> set[tuple[str, str, int, int]]:
    """How many listed members each board has at each XP value above 0."""
    counts = Counter((kind, key, xp) for _, kind, key, xp, _, listed in totals if listed and xp > 0)
    return {(*bucket, members) for bucket, members in counts.items()}


async def three_members(world: World) -> tuple[int, int, int, int]:
    """ada 300, bob 200, cyd 100 (first to 100), dan 100 (later): in that order on every board."""
    ada, bob, cyd, dan = [await world.member(user_id) for user_id in (1, 2, 3, 4)]
    await world.verdict(ada, NOW - timedelta(hours=4), xp=300)
    await world.verdict(bob, NOW - timedelta(hours=3), xp=200)
    await world.verdict(cyd, NOW - timedelta(hours=2), xp=100)
    await world.verdict(dan, NOW - timedelta(hours=1), xp=100)
    return ada, bob, cyd, dan


async def test_a_hidden_member_leaves_the_pages_and_ranks_close_up(world: World) -> None:
    ada, bob, cyd, dan = await three_members(world)
    before = {period: await board(world, period) for period in ("all", "week", "month")}
    assert places(before["all"]) == [(1, ada, 300), (2, bob, 200), (3, cyd, 100), (4, dan, 100)]
    assert await hide(world, 2)
    assert not await hide(world, 2)  # already hidden: nothing moves twice
    for period in ("all", "week", "month"):
        page = await board(world, period, caller=cyd)
        assert places(page) == [(1, ada, 300), (2, cyd, 100), (3, dan, 100)]
        assert page.ranked == 3 and page.caller is not None and page.caller.rank == 2
        # bob still gets his own place: 1 + the listed members ahead, marked unlisted
        mine = (await board(world, period, caller=bob)).caller
        assert mine is not None and (mine.rank, mine.xp, mine.listed) == (2, 200, False)
    async with world.sessions() as session:
        bob_profile = await profile(
            session,
            guild_id=GUILD_ID,
            member_id=bob,
            tz=BERLIN,
            now=NOW,
            content_task_refs_by_quest={},
        )
        assert (bob_profile.rank, bob_profile.hidden, bob_profile.total_xp) == (2, True, 200)
        dan_rank = await rank_of(session, GUILD_ID, "all", "all", dan)
    assert dan_rank is not None and (dan_rank.rank, dan_rank.listed) == (3, True)
    assert await show(world, 2)
    assert not await show(world, 2)
    for period, page in before.items():
        assert await board(world, period) == page  # all back as it was


async def test_a_hidden_member_earning_stays_off_the_boards(world: World) -> None:
    ada, bob, cyd, _ = await three_members(world)
    await hide(world, 2)
    next_week = NOW + timedelta(days=7)  # a new week and a new month row, created while hidden
    await world.verdict(bob, next_week, task="q9/build", xp=1000)
    async with world.sessions() as session:
        top = await rank_of(session, GUILD_ID, "all", "all", bob)
        week = await rank_of(
            session, GUILD_ID, "week", week_key(next_week.astimezone(BERLIN).date()), bob
        )
    assert top is not None and (top.rank, top.xp, top.listed) == (1, 1200, False)
    assert week is not None and (week.rank, week.listed) == (1, False)
    assert [e.member_id for e in (await board(world)).entries][:2] == [ada, cyd]
    totals = await listed_totals(world)
    assert {listed for member, *_, listed in totals if member == bob} == {False}
    await show(world, 2)
    assert [e.member_id for e in (await board(world)).entries][:2] == [bob, ada]


async def test_totals_with_hidden_members_equal_a_rebuild(world: World) -> None:
    """The incremental totals, listed flags and buckets through hides, shows, awards and a
    deletion equal what a rebuild from the ledger makes of them."""
    members = [await world.member(user_id) for user_id in (1, 2, 3, 4)]
    start = timeline.local(MONDAY - timedelta(days=40), time(0, 30), BERLIN)  # 5 weeks, 2 months
    for day in range(0, 40, 4):
        for n, member in enumerate(members):
            when = start + timedelta(days=day, hours=5 * n)
            await world.verdict(member, when, task=f"q{day}/build", xp=10 + 5 * (n % 2))
        if day == 8:
            await hide(world, 2)
            await hide(world, 3)
        if day == 20:
            await show(world, 3)
        if day == 28:
            await delete(world, 4, now=start + timedelta(days=day, hours=23))
    await world.grant(members[1], -15, start + timedelta(days=30))  # while hidden
    incremental = await listed_totals(world)
    counted = await world.buckets()
    assert {row[:5] for row in incremental} == totals_from_ledger(await world.ledger(), BERLIN)
    assert counted == listed_buckets(incremental)
    assert {(m, listed) for m, *_, listed in incremental} == {
        (members[0], True),
        (members[1], False),
        (members[2], True),
        (members[3], False),
    }
    async with world.sessions() as session, session.begin():
        await rebuild_totals(session, guild_id=GUILD_ID, tz=BERLIN)
    assert await listed_totals(world) == incremental
    assert await world.buckets() == counted


async def test_weekly_highlights_leave_hidden_members_out(world: World) -> None:
    week = week_of(MONDAY, BERLIN)
    monday = timeline.local(MONDAY, time(8, 0), BERLIN)
    ada, bob, cyd = [await world.member(user_id) for user_id in (1, 2, 3)]
    for day in range(3):  # three-day streaks, and level 3 within the week, for ada and bob
        for member, xp in ((ada, 60), (bob, 50), (cyd, 10)):
            await world.verdict(member, monday + timedelta(days=day), task=f"q{day}/b", xp=xp)
    await hide(world, 1)
    async with world.sessions() as session:
        result = await weekly_highlights(
            session, guild_id=GUILD_ID, week=week, tz=BERLIN, now=monday + timedelta(days=2)
        )
    assert [(e.rank, e.member_id) for e in result.top] == [(1, bob), (2, cyd)]
    assert [u.member_id for u in result.level_ups] == [bob]
    assert [s.member_id for s in result.streaks] == [bob, cyd]


async def test_export_is_everything_kept_about_the_member(world: World) -> None:
    ada, bob = await world.member(ADA_USER, "Ada"), await world.member(2)
    code = b"def matmul(a, b):\n    return a @ b  # ada's own\n"
    submission = await submit(world, ada, code)
    await submit(world, bob, b"# bob's, not ada's\n")
    await world.verdict(ada, NOW - timedelta(days=1), xp=60, submission_id=submission)
    async with world.sessions() as session, session.begin():
        await award_verdict(
            session,
            guild_id=GUILD_ID,
            member_id=ada,
            task_ref="q1/quiz",
            task_xp=30,
            status="passed",
            score=2 / 3,
            submission_id=None,
            tz=BERLIN,
            now=NOW,
            source="quiz",
        )
    await world.done(ada, NOW + timedelta(hours=1), "q1/read", xp=20)
    await hide(world, ADA_USER, "Ada")
    data = await export(world, ADA_USER)
    assert data is not None
    parsed = json.loads(privacy.export_json(data))
    assert parsed["member"]["user_id"] == ADA_USER and parsed["member"]["hidden"] is True
    assert parsed["member"]["display_name"] == "Ada"
    (kept,) = parsed["submissions"]
    assert kept["code"] == code.decode() and kept["id"] == submission
    assert kept["verdict"] == {"status": "passed", "feedback": "all checks passed"}
    assert [job["status"] for job in kept["grading_jobs"]] == ["done"]
    sources = [row["source"] for row in parsed["ledger"]]
    assert sources == ["task", "quiz", "streak", "self"]  # one streak bonus a day
    assert [(q["task_ref"], q["xp"]) for q in parsed["quiz_results"]] == [("q1/quiz", 20)]
    assert [(c["task_ref"], c["source"], c["xp"]) for c in parsed["completions"]] == [
        ("q1/build", "task", 60),
        ("q1/quiz", "quiz", 20),
        ("q1/read", "self", 20),
    ]
    all_time = [t for t in parsed["totals"] if t["period_kind"] == "all"]
    assert [(t["xp"], t["listed"]) for t in all_time] == [(60 + 20 + 5 + 20, False)]
    assert datetime.fromisoformat(parsed["exported_at"]) == NOW
    assert "bob" not in json.dumps(parsed)
    assert await export(world, 404) is None  # never used the bot here: nothing kept


async def test_an_export_too_large_for_discord_is_gzipped_or_refused(world: World) -> None:
    ada = await world.member(1)
    await submit(world, ada, b"x = 1\n" * 2000)
    data = await export(world, 1)
    assert data is not None
    plain = privacy.export_json(data)
    assert privacy.export_file(data, max_bytes=len(plain)) == privacy.ExportFile(
        f"brrrbot-export-{GUILD_ID}.json", plain
    )
    packed = privacy.export_file(data, max_bytes=len(plain) - 1)
    assert packed is not None and packed.filename.endswith(".json.gz")
    assert gzip.decompress(packed.data) == plain
    assert privacy.export_file(data, max_bytes=100) is None


async def test_delete_removes_the_code_and_anonymises_the_rest(world: World) -> None:
    ada, bob = await world.member(ADA_USER, "Ada"), await world.member(2)
    code = b"print('ada-was-here')\n"
    first = await submit(world, ada, code)
    await submit(world, ada, code, task="q2/build")
    await submit(world, bob, b"print('bob')\n")
    await world.verdict(ada, NOW - timedelta(hours=2), xp=500, submission_id=first)
    await world.verdict(bob, NOW - timedelta(hours=1), xp=100)
    await world.done(ada, NOW, "q1/read")
    async with world.sessions() as session, session.begin():
        session.add_all(
            WeeklyChampion(guild_id=GUILD_ID, period=period, user_id=user_id)
            for period, user_id in (("2026-W46", ADA_USER), ("2026-W46", 2), ("2026-W47", ADA_USER))
        )
    ledger_before = [(e.id, e.member_id, e.amount) for e in await world.ledger()]

    done = await delete(world, ADA_USER)
    assert done == privacy.Deletion(
        found=True, submissions=2, grading_jobs=2, ledger_rows_anonymised=2
    )
    async with world.sessions() as session:
        gone = await session.get(Member, ada)
        assert gone is not None
        assert (gone.user_id, gone.display_name, gone.hidden) == (-ada, "", True)
        assert gone.anonymised_at == NOW
        left = (await session.execute(select(Submission.member_id))).scalars().all()
        jobs = (await session.execute(select(func.count()).select_from(GradingJob))).scalar()
        champions = (
            await session.execute(select(WeeklyChampion.period, WeeklyChampion.user_id))
        ).all()
        queued = (await session.execute(select(RoleSync.user_id))).scalars().all()
        (entry,) = (await session.execute(select(AuditEntry))).scalars().all()
    assert left == [bob] and jobs == 1  # ada's jobs went with her submissions (FK cascade)
    # a week she shared keeps its other champion; the one she held alone had nobody, so the
    # week before does not become the latest crowned one
    assert sorted(champions) == [("2026-W46", 2), ("2026-W47", NOBODY)]
    assert queued == [ADA_USER]  # the role reconciler takes back the roles she was given
    # the ledger keeps every row, now pointing at a row that names nobody
    assert [(e.id, e.member_id, e.amount) for e in await world.ledger()] == ledger_before
    for period in ("all", "week", "month"):
        assert [e.member_id for e in (await board(world, period)).entries] == [bob]
    assert (entry.action, entry.actor_user_id) == (privacy.DELETE_ACTION, 0)
    assert entry.details == {"submissions": 2, "grading_jobs": 2, "ledger_rows_anonymised": 2}
    audit_text = json.dumps([entry.target, entry.details, entry.actor_user_id])
    assert (
        str(ADA_USER) not in audit_text and "Ada" not in audit_text and str(ada) not in audit_text
    )
    assert await export(world, ADA_USER) is None

    again = await delete(world, ADA_USER)  # idempotent: nothing is found, nothing is written
    assert again == privacy.Deletion(
        found=False, submissions=0, grading_jobs=0, ledger_rows_anonymised=0
    )
    async with world.sessions() as session:
        audits = (await session.execute(select(func.count()).select_from(AuditEntry))).scalar()
    assert audits == 1

    fresh = await world.member(ADA_USER, "Ada")  # back again: a new member, from 0
    assert fresh != ada
    async with world.sessions() as session:
        assert await rank_of(session, GUILD_ID, "all", "all", fresh) is None
    await world.done(fresh, NOW + timedelta(hours=1), "q1/read")
    page = await board(world, caller=fresh)
    assert places(page) == [(1, bob, 100), (2, fresh, 20)]


@pytest.fixture
async def sqlite_engine(sqlite_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(sqlite_url)
    await migrate.upgrade(engine)
    yield engine
    await engine.dispose()


async def test_deleted_code_leaves_the_database_file(sqlite_engine: AsyncEngine) -> None:
    """The bytes of the code are gone from the SQLite file and its WAL, not merely unlinked."""
    world = World(make_sessionmaker(sqlite_engine))
    database = sqlite_path(sqlite_engine.url)
    assert database is not None
    marker = b"UNIQUE-MARKER-7f3a9c"
    short = b"def f():\n    return '" + marker + b"'\n"
    # longer than a page: the row spills into overflow pages, which are freed separately
    long = b"# padding line\n" * 600 + marker + b"\n" + b"# more padding\n" * 600
    ada, bob = await world.member(ADA_USER), await world.member(2)
    first = await submit(world, ada, short)
    await submit(world, ada, long, task="q2/build")
    await submit(world, bob, b"print('bob')\n")
    await world.verdict(ada, NOW, xp=60, submission_id=first)
    async with world.sessions() as session, session.begin():  # rows rewritten, as delivery does
        await session.execute(
            text("UPDATE submissions SET delivered_via = 'edit', delivery_attempts = 1")
        )
    await checkpoint_wal(sqlite_engine)  # old copies in the main file, not only in the WAL
    assert marker in _stored_bytes(database)  # the test can see the code while it is kept

    await delete(world, ADA_USER)
    assert await checkpoint_wal(sqlite_engine) is True
    assert marker not in _stored_bytes(database)
    wal = Path(f"{database}-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def _stored_bytes(database: Path) -> bytes:
    """The database file and its write-ahead log, as they are on disk."""
    wal = Path(f"{database}-wal")
    return database.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


async def test_delete_ends_the_members_api_token(world: World) -> None:
    await world.member(ADA_USER, "ada")
    async with world.sessions() as session, session.begin():
        token = await tokens.issue(session, GUILD_ID, ADA_USER, "ada", NOW)
        assert (await tokens.authenticate(session, token, NOW)).user_id == ADA_USER
    await delete(world, ADA_USER)
    async with world.sessions() as session, session.begin():
        assert await session.scalar(select(func.count()).select_from(ApiToken)) == 0
        with pytest.raises(tokens.TokenRefused):
            await tokens.authenticate(session, token, NOW)


async def test_a_reader_holding_the_log_keeps_it_from_being_emptied(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Your data: "Should a long read keep the log from being emptied, ... the old pages stay
    in the log": the checkpoint after a deletion says so (False, which the bot logs as a
    warning) instead of waiting for the reader, and empties the log once it is gone."""
    import sqlite3

    from bot.db import engine as engines

    monkeypatch.setattr(engines, "SQLITE_BUSY_TIMEOUT_MS", 200)  # how long it waits for readers
    engine = make_engine(sqlite_url)
    try:
        await migrate.upgrade(engine)
        world = World(make_sessionmaker(engine))
        database = sqlite_path(engine.url)
        assert database is not None
        await submit(world, await world.member(ADA_USER), b"# held-by-a-reader\n")
        reader = sqlite3.connect(database, isolation_level=None)
        try:
            reader.execute("BEGIN")
            assert reader.execute("SELECT COUNT(*) FROM submissions").fetchone() == (1,)
            await delete(world, ADA_USER)  # written to the log while the reader's snapshot holds
            assert await checkpoint_wal(engine) is False
            assert Path(f"{database}-wal").stat().st_size > 0
        finally:
            reader.close()
        assert await checkpoint_wal(engine) is True
        assert Path(f"{database}-wal").stat().st_size == 0
    finally:
        await engine.dispose()
