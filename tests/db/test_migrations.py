"""The migration chain builds exactly the models, both ways, atomically, and keeps the rows
already stored (0009: speed results of the previous instrument stay, retired; 0010: every
submission, job and verdict stays while the states become constrained)."""

from __future__ import annotations

import hashlib
import itertools
import json
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import Base, GradingJob, Submission
from bot.db.states import JobStatus, SubmissionStatus
from bot.db.types import UTCDateTime
from bot.errors import DatabaseError
from bot.progress.periods import week_of
from bot.progress.speed_results import fastest_of_week, record_speed, speed_board, speed_task_refs
from graders.base import SPEED_INSTRUMENT, SpeedResult, Verdict
from tests import timeline
from tests.postgres_server import BACKENDS, PostgresServer
from tests.progress.world import BERLIN, GUILD_ID, World

EXPECTED_TABLES = {
    "guilds",
    "members",
    "guild_quests",
    "quest_schedule",
    "submissions",
    "grading_jobs",
    "xp_ledger",
    "post_log",
    "audit_log",
    "worker_heartbeats",
}


def _diff(connection: Any) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return compare_metadata(context, Base.metadata)


def _tables(connection: Any) -> set[str]:
    return set(inspect(connection).get_table_names())


async def test_head_matches_models(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        assert await connection.run_sync(_diff) == []
        assert await connection.run_sync(_tables) >= EXPECTED_TABLES
    assert await migrate.current(engine) == migrate.head_revision()


@pytest.fixture(params=BACKENDS)
async def empty_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    """An empty database on each backend."""
    if request.param == "sqlite":
        return sqlite_url
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return await server.create_database(migrated=False)


async def test_empty_head_base_head(empty_url: str) -> None:
    engine = make_engine(empty_url)
    try:
        assert await migrate.current(engine) is None
        await migrate.upgrade(engine)
        await migrate.downgrade(engine, "base")
        async with engine.connect() as connection:
            assert await connection.run_sync(_tables) & EXPECTED_TABLES == set()
        assert await migrate.current(engine) is None
        await migrate.upgrade(engine)
        async with engine.connect() as connection:
            assert await connection.run_sync(_diff) == []
    finally:
        await engine.dispose()


async def test_failed_migration_leaves_nothing_half_written(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    try:
        async with engine.begin() as connection:
            # A stray table that the initial migration also creates, late in its order.
            await connection.execute(text("CREATE TABLE grading_jobs (id INTEGER)"))
        with pytest.raises(DatabaseError, match="grading_jobs"):
            await migrate.upgrade(engine)
        async with engine.connect() as connection:
            assert await connection.run_sync(_tables) == {"grading_jobs"}
        assert await migrate.current(engine) is None
    finally:
        await engine.dispose()


#: ``speed_results`` as revision 0008 left it
SPEED_RESULTS_0008 = sa.table(
    "speed_results",
    *(sa.column(name, sa.Integer()) for name in ("guild_id", "member_id", "submission_id")),
    *(sa.column(name, sa.String()) for name in ("task_ref", "device")),
    *(sa.column(name, sa.Float()) for name in ("ratio", "learner_s", "reference_s", "spread")),
    sa.column("pairs", sa.Integer()),
    sa.column("created_at", UTCDateTime()),
)
TASK = "go-brrrr/matmul-three-ways"
#: a week after the real now, as the boards' own tests use
WEEK = week_of(timeline.monday_after(timeline.now(), days=7).date(), BERLIN)
_SUBMITTED = itertools.count()


async def _submission(world: World, member_id: int) -> int:
    code = f"def matmul(a, b): return a @ b  # {member_id} {next(_SUBMITTED)}\n".encode()
    async with world.sessions() as session, session.begin():
        row = Submission(
            guild_id=GUILD_ID,
            member_id=member_id,
            task_ref=TASK,
            filename="solution.py",
            file_kind="py",
            content=code,
            size_bytes=len(code),
            sha256=hashlib.sha256(code).hexdigest(),
            status="passed",
            score=1.0,
        )
        session.add(row)
    return row.id


def _speed_rows(connection: Any) -> list[tuple[Any, ...]]:
    columns = {c["name"] for c in inspect(connection).get_columns("speed_results")}
    names = [n for n in ("submission_id", "ratio", "instrument", "board_ratio") if n in columns]
    query = text(f"SELECT {', '.join(names)} FROM speed_results ORDER BY id")
    return [tuple(row) for row in connection.execute(query)]


def _speed_indexes(connection: Any) -> dict[str, list[str]]:
    indexes = inspect(connection).get_indexes("speed_results")
    return {index["name"]: index["column_names"] for index in indexes}


async def test_0009_keeps_the_old_speed_results_retired(empty_url: str) -> None:
    """Rows measured before instruments were named survive the upgrade as instrument 1 with
    their ratio as the board ratio, rank nowhere, and survive the downgrade too."""
    engine = make_engine(empty_url)
    try:
        await migrate.upgrade(engine, "0008")
        world = World(make_sessionmaker(engine))
        ada, bob = await world.member(1), await world.member(2)
        when = WEEK.start + timedelta(days=2)
        old = [(ada, 2.5, "NVIDIA H200"), (ada, 3.0, "NVIDIA H200"), (bob, 1.2, "AMD EPYC")]
        stored = [(await _submission(world, member_id), ratio) for member_id, ratio, _ in old]
        async with engine.begin() as connection:
            for (member_id, ratio, device), (submission_id, _) in zip(old, stored, strict=True):
                await connection.execute(
                    SPEED_RESULTS_0008.insert().values(
                        guild_id=GUILD_ID,
                        member_id=member_id,
                        submission_id=submission_id,
                        task_ref=TASK,
                        device=device,
                        ratio=ratio,
                        learner_s=0.01 / ratio,
                        reference_s=0.01,
                        spread=0.1,
                        pairs=15,
                        created_at=when,
                    )
                )

        await migrate.upgrade(engine)
        async with engine.connect() as connection:
            assert await connection.run_sync(_speed_rows) == [(s, r, 1, r) for s, r in stored]
            assert await connection.run_sync(_diff) == []  # the copy kept every constraint
        async with world.sessions() as session:
            board = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
            assert await fastest_of_week(session, guild_id=GUILD_ID, week=WEEK) is None
            assert await speed_task_refs(session, GUILD_ID) == ()
        assert board.empty and board.retired == 2  # ada and bob: nobody ranks

        # a trial of today's instrument ranks alone beside them
        fresh = await _submission(world, bob)
        trial = SpeedResult(
            ratio=1.6,
            learner_s=0.01 / 1.6,
            reference_s=0.01,
            spread=0.05,
            pairs=41,
            device="AMD EPYC",
            instrument=SPEED_INSTRUMENT,
            board_ratio=1.4,
        )
        async with world.sessions() as session, session.begin():
            await record_speed(
                session,
                guild_id=GUILD_ID,
                member_id=bob,
                submission_id=fresh,
                task_ref=TASK,
                speed=trial,
                submitted_at=when,
                now=when,
            )
        async with world.sessions() as session:
            board = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
        assert [(d.device, [e.member_id for e in d.entries]) for d in board.devices] == [
            ("AMD EPYC", [bob])
        ]
        assert board.retired == 1  # ada

        await migrate.downgrade(engine, "0008")
        async with engine.connect() as connection:
            rows = await connection.run_sync(_speed_rows)
            indexes = await connection.run_sync(_speed_indexes)
        assert rows == [*stored, (fresh, 1.6)]  # nothing deleted either way
        assert indexes["ix_speed_results_guild_id_task_ref_device"] == [
            "guild_id",
            "task_ref",
            "device",
            "ratio",
        ]
        await migrate.upgrade(engine)
        async with engine.connect() as connection:
            assert await connection.run_sync(_diff) == []
    finally:
        await engine.dispose()


#: the tables as revision 0009 left them, as far as 0010 changes or must keep them
SUBMISSIONS_0009 = sa.table(
    "submissions",
    sa.column("id", sa.Integer()),
    *(sa.column(name, sa.Integer()) for name in ("guild_id", "member_id", "size_bytes")),
    *(sa.column(n, sa.String()) for n in ("task_ref", "filename", "file_kind", "sha256", "status")),
    sa.column("content", sa.LargeBinary()),
    sa.column("verdict", sa.JSON()),
    sa.column("created_at", UTCDateTime()),
)
JOBS_0009 = sa.table(
    "grading_jobs",
    sa.column("id", sa.Integer()),
    *(sa.column(n, sa.Integer()) for n in ("submission_id", "attempts", "max_attempts")),
    sa.column("status", sa.String()),
    sa.column("result", sa.JSON()),
    *(sa.column(name, UTCDateTime()) for name in ("available_at", "created_at")),
)
SPEED_RESULTS_0009 = sa.table(
    "speed_results",
    *(sa.column(name, sa.Integer()) for name in ("guild_id", "member_id", "submission_id")),
    *(sa.column(name, sa.String()) for name in ("task_ref", "device")),
    *(sa.column(n, sa.Float()) for n in ("ratio", "learner_s", "reference_s", "spread")),
    *(sa.column(name, sa.Integer()) for name in ("pairs", "instrument")),
    sa.column("board_ratio", sa.Float()),
    sa.column("created_at", UTCDateTime()),
)


def _verdict(status: str, score: float, feedback: str) -> dict[str, Any]:
    return Verdict(TASK, status, score, (), feedback).to_json()  # type: ignore[arg-type]


async def _submission_0009(
    connection: AsyncConnection, member_id: int, status: str, verdict: dict[str, Any] | None
) -> int:
    code = f"def matmul(a, b): return a @ b  # {next(_SUBMITTED)}\n".encode()
    inserted = await connection.execute(
        SUBMISSIONS_0009.insert()
        .values(
            guild_id=GUILD_ID,
            member_id=member_id,
            task_ref=TASK,
            filename="solution.py",
            file_kind="py",
            content=code,
            size_bytes=len(code),
            sha256=hashlib.sha256(code).hexdigest(),
            status=status,
            verdict=verdict,
            created_at=timeline.now(),
        )
        .returning(SUBMISSIONS_0009.c.id)
    )
    return int(inserted.scalar_one())


async def _job_0009(
    connection: AsyncConnection, submission_id: int, status: str, result: dict[str, Any] | None
) -> int:
    inserted = await connection.execute(
        JOBS_0009.insert()
        .values(
            submission_id=submission_id,
            status=status,
            attempts=1,
            max_attempts=3,
            result=result,
            available_at=timeline.now(),
            created_at=timeline.now(),
        )
        .returning(JOBS_0009.c.id)
    )
    return int(inserted.scalar_one())


def _state_rows(connection: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Every row 0010 must keep: submissions with their verdicts, jobs, speed results."""
    query = {
        "submissions": "SELECT id, status, verdict FROM submissions ORDER BY id",
        "grading_jobs": "SELECT id, submission_id, status FROM grading_jobs ORDER BY id",
        "speed_results": "SELECT submission_id, ratio FROM speed_results ORDER BY id",
    }
    rows = {
        table: [tuple(row) for row in connection.execute(text(sql))] for table, sql in query.items()
    }
    # a JSON column reads back as text on SQLite through a raw query
    rows["submissions"] = [
        (sid, status, json.loads(verdict) if isinstance(verdict, str) else verdict)
        for sid, status, verdict in rows["submissions"]
    ]
    return rows


def _results(connection: Any) -> dict[int, Any]:
    rows = connection.execute(text("SELECT id, result FROM grading_jobs ORDER BY id"))
    return {
        job_id: json.loads(result) if isinstance(result, str) else result for job_id, result in rows
    }


def _job_columns(connection: Any) -> set[str]:
    return {column["name"] for column in inspect(connection).get_columns("grading_jobs")}


async def _refused(engine: AsyncEngine, table: str, row_id: int, status: str) -> bool:
    """Whether the database itself (raw SQL, past the models' enums) refuses ``status``."""
    try:
        async with engine.begin() as connection:
            await connection.execute(
                text(f"UPDATE {table} SET status = :status WHERE id = :id"),
                {"status": status, "id": row_id},
            )
            raise _Undo
    except IntegrityError as exc:
        assert f"ck_{table}_status" in str(exc.orig)
        return True
    except _Undo:
        return False


class _Undo(Exception):
    """Rolls back a write that was only a probe."""


async def test_0010_constrains_the_states_and_keeps_every_verdict_once(empty_url: str) -> None:
    """The upgrade keeps every submission, job and speed result (on SQLite, rebuilding
    ``submissions`` must not cascade to its jobs), moves a verdict only a job held onto its
    submission, drops ``result`` and has the database refuse unknown states; the downgrade
    gives each submission's latest finished job its verdict back and accepts any state again."""
    engine = make_engine(empty_url)
    try:
        await migrate.upgrade(engine, "0009")
        ada = await World(make_sessionmaker(engine)).member(1)
        latest = _verdict("passed", 1.0, "well done")
        dead = Verdict.internal_error(TASK, "grading failed 3 times").to_json()
        older = _verdict("failed", 0.5, "almost")
        async with engine.begin() as connection:
            graded = await _submission_0009(connection, ada, "passed", latest)
            graded_job = await _job_0009(connection, graded, "done", latest)
            only_on_job = await _submission_0009(connection, ada, "error", None)
            only_on_job_job = await _job_0009(connection, only_on_job, "dead", dead)
            regraded = await _submission_0009(connection, ada, "queued", older)
            first_grading = await _job_0009(connection, regraded, "done", older)
            regrading = await _job_0009(connection, regraded, "queued", None)
            waiting = await _submission_0009(connection, ada, "grading", None)
            waiting_job = await _job_0009(connection, waiting, "running", None)
            await connection.execute(
                SPEED_RESULTS_0009.insert().values(
                    guild_id=GUILD_ID,
                    member_id=ada,
                    submission_id=graded,
                    task_ref=TASK,
                    device="AMD EPYC",
                    ratio=1.5,
                    learner_s=0.01 / 1.5,
                    reference_s=0.01,
                    spread=0.1,
                    pairs=41,
                    instrument=SPEED_INSTRUMENT,
                    board_ratio=1.3,
                    created_at=timeline.now(),
                )
            )
        async with engine.connect() as connection:
            before = await connection.run_sync(_state_rows)

        await migrate.upgrade(engine)
        async with engine.connect() as connection:
            after = await connection.run_sync(_state_rows)
            assert await connection.run_sync(_diff) == []
            assert "result" not in await connection.run_sync(_job_columns)
        assert after["grading_jobs"] == before["grading_jobs"]
        assert after["speed_results"] == before["speed_results"] == [(graded, 1.5)]
        assert after["submissions"] == [
            (graded, "passed", latest),
            (only_on_job, "error", dead),  # the verdict only its job held, kept
            (regraded, "queued", older),
            (waiting, "grading", None),
        ]
        assert await _refused(engine, "submissions", graded, "cancelled")
        assert await _refused(engine, "grading_jobs", graded_job, "finished")
        assert not await _refused(engine, "grading_jobs", graded_job, "dead")  # a known one
        async with make_sessionmaker(engine)() as session:
            submission = await session.get(Submission, regraded)
            job = await session.get(GradingJob, waiting_job)
        assert submission is not None and submission.status is SubmissionStatus.QUEUED
        assert job is not None and job.status is JobStatus.RUNNING

        await migrate.downgrade(engine, "0009")
        async with engine.connect() as connection:
            assert await connection.run_sync(_state_rows) == after
            results = await connection.run_sync(_results)
        assert results == {
            graded_job: latest,
            only_on_job_job: dead,
            first_grading: older,  # the latest finished job of a submission being regraded
            regrading: None,
            waiting_job: None,
        }
        assert not await _refused(engine, "submissions", graded, "cancelled")
        assert not await _refused(engine, "grading_jobs", graded_job, "finished")

        await migrate.upgrade(engine)
        async with engine.connect() as connection:
            assert await connection.run_sync(_diff) == []
            assert await connection.run_sync(_state_rows) == after
    finally:
        await engine.dispose()


async def test_0010_names_the_rows_in_an_unknown_state_and_changes_nothing(
    empty_url: str,
) -> None:
    engine = make_engine(empty_url)
    try:
        await migrate.upgrade(engine, "0009")
        ada = await World(make_sessionmaker(engine)).member(1)
        async with engine.begin() as connection:
            for _ in range(2):
                await _submission_0009(connection, ada, "cancelled", None)
            await _job_0009(
                connection, await _submission_0009(connection, ada, "queued", None), "lost", None
            )
        with pytest.raises(DatabaseError) as refused:
            await migrate.upgrade(engine)
        assert "submissions: 2 row(s) 'cancelled'" in str(refused.value)
        assert "grading_jobs: 1 row(s) 'lost'" in str(refused.value)
        assert await migrate.current(engine) == "0009"
        async with engine.connect() as connection:
            assert "result" in await connection.run_sync(_job_columns)
    finally:
        await engine.dispose()


async def test_sqlite_migrations_run_with_foreign_keys_off_and_leave_none_dangling(
    sqlite_url: str,
) -> None:
    """A table rebuilt on SQLite cascades to nothing (test_0010 above keeps every job); a
    migration that leaves a row pointing nowhere is refused and rolled back; and the
    connection goes back to the pool with foreign keys on again."""
    engine = make_engine(sqlite_url)
    try:
        await migrate.upgrade(engine)

        def orphan(connection: Any) -> None:
            connection.execute(
                JOBS_0009.insert().values(
                    submission_id=999,
                    status="queued",
                    attempts=0,
                    max_attempts=3,
                    available_at=timeline.now(),
                    created_at=timeline.now(),
                )
            )

        with pytest.raises(DatabaseError, match=r"1 row\(s\) pointing at rows that do not exist"):
            await migrate._run(engine, orphan, schema_change=True)
        async with engine.connect() as connection:
            assert (
                await connection.execute(text("SELECT count(*) FROM grading_jobs"))
            ).scalar() == 0
            assert (await connection.execute(text("PRAGMA foreign_keys"))).scalar() == 1
    finally:
        await engine.dispose()


#: ``speed_results`` as revision 0010 left it
SPEED_RESULTS_0010 = sa.table(
    "speed_results",
    *(sa.column(name, sa.Integer()) for name in ("guild_id", "member_id", "submission_id")),
    *(sa.column(name, sa.String()) for name in ("task_ref", "device")),
    *(
        sa.column(name, sa.Float())
        for name in ("ratio", "learner_s", "reference_s", "spread", "board_ratio")
    ),
    *(sa.column(name, sa.Integer()) for name in ("pairs", "instrument")),
    sa.column("created_at", UTCDateTime()),
)


async def test_0011_adds_the_roofline_figures_empty_and_refuses_an_unknown_bound(
    empty_url: str,
) -> None:
    """A row stored before keeps every value and gets no made-up figures; the bound column
    accepts only the four bounds; the downgrade keeps the row."""
    engine = make_engine(empty_url)
    try:
        await migrate.upgrade(engine, "0010")
        world = World(make_sessionmaker(engine))
        ada = await world.member(1)
        submission_id = await _submission(world, ada)
        async with engine.begin() as connection:
            await connection.execute(
                SPEED_RESULTS_0010.insert().values(
                    guild_id=GUILD_ID,
                    member_id=ada,
                    submission_id=submission_id,
                    task_ref=TASK,
                    device="AMD EPYC",
                    ratio=1.5,
                    learner_s=0.002,
                    reference_s=0.003,
                    spread=0.05,
                    board_ratio=1.4,
                    pairs=50,
                    instrument=SPEED_INSTRUMENT,
                    created_at=timeline.now(),
                )
            )
        await migrate.upgrade(engine)
        figures = "moved_bytes, flops, achieved_gbs, achieved_gflops, peak_gbs, peak_gflops, bound"
        async with engine.connect() as connection:
            row = (
                await connection.execute(text(f"SELECT ratio, {figures} FROM speed_results"))
            ).one()
            assert tuple(row) == (1.5, None, None, None, None, None, None, None)
            assert await connection.run_sync(_diff) == []
        for bound, accepted in (("neither", True), ("fast", False)):
            async with engine.connect() as connection:
                update = text("UPDATE speed_results SET bound = :bound")
                if accepted:
                    await connection.execute(update, {"bound": bound})
                else:
                    with pytest.raises(IntegrityError):
                        await connection.execute(update, {"bound": bound})
                await connection.rollback()
        await migrate.downgrade(engine, "0010")
        async with engine.connect() as connection:
            assert await connection.run_sync(_speed_rows) == [(submission_id, 1.5, 2, 1.4)]
            columns = {c["name"] for c in await connection.run_sync(_speed_columns)}
        assert "bound" not in columns and "moved_bytes" not in columns
    finally:
        await engine.dispose()


def _speed_columns(connection: Any) -> list[Any]:
    return list(inspect(connection).get_columns("speed_results"))


async def test_0012_leaves_every_existing_server_off_the_web(empty_url: str) -> None:
    """A server set up before 0012 is not published by the upgrade; the downgrade keeps it."""
    engine = make_engine(empty_url)
    try:
        await migrate.upgrade(engine, "0011")
        async with engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO guilds (id, quest_channel_id, post_time, timezone, "
                    "weekly_post_day, created_at, updated_at) "
                    "VALUES (:id, 1, '09:00', 'UTC', 0, :now, :now)"
                ),
                {"id": GUILD_ID, "now": timeline.now()},
            )
        await migrate.upgrade(engine)
        async with engine.connect() as connection:
            flags = (await connection.execute(text("SELECT id, web_pages FROM guilds"))).all()
            assert [tuple(row) for row in flags] == [(GUILD_ID, False)]
            assert await connection.run_sync(_diff) == []
        await migrate.downgrade(engine, "0011")
        async with engine.connect() as connection:
            ids = (await connection.execute(text("SELECT id FROM guilds"))).scalars().all()
            columns = {c["name"] for c in await connection.run_sync(_guild_columns)}
        assert list(ids) == [GUILD_ID] and "web_pages" not in columns
    finally:
        await engine.dispose()


def _guild_columns(connection: Any) -> list[Any]:
    return list(inspect(connection).get_columns("guilds"))


async def test_0014_leaves_every_result_ranked_and_the_downgrade_keeps_the_rows(
    empty_url: str,
) -> None:
    """A result stored before 0014 is not void after it (it still ranks); a void set after it
    is gone with the columns on the downgrade, the row kept."""
    engine = make_engine(empty_url)
    try:
        await migrate.upgrade(engine, "0012")
        world = World(make_sessionmaker(engine))
        ada = await world.member(1)
        submission_id = await _submission(world, ada)
        async with engine.begin() as connection:
            await connection.execute(
                SPEED_RESULTS_0010.insert().values(
                    guild_id=GUILD_ID,
                    member_id=ada,
                    submission_id=submission_id,
                    task_ref=TASK,
                    device="AMD EPYC",
                    ratio=1.5,
                    learner_s=0.002,
                    reference_s=0.003,
                    spread=0.05,
                    board_ratio=1.4,
                    pairs=50,
                    instrument=SPEED_INSTRUMENT,
                    created_at=timeline.now(),
                )
            )
        await migrate.upgrade(engine)
        voids = "voided_at, void_reason, voided_by, void_notified_at"
        async with engine.connect() as connection:
            row = (await connection.execute(text(f"SELECT {voids} FROM speed_results"))).one()
            assert tuple(row) == (None, None, None, None)
            assert await connection.run_sync(_diff) == []
        async with make_sessionmaker(engine)() as session:
            board = await speed_board(session, guild_id=GUILD_ID, task_ref=TASK)
        assert [e.member_id for d in board.devices for e in d.entries] == [ada]
        async with engine.begin() as connection:
            await connection.execute(
                text("UPDATE speed_results SET voided_at = :now, void_reason = 'x', voided_by = 7"),
                {"now": timeline.now()},
            )
        await migrate.downgrade(engine, "0012")
        async with engine.connect() as connection:
            assert await connection.run_sync(_speed_rows) == [(submission_id, 1.5, 2, 1.4)]
            columns = {c["name"] for c in await connection.run_sync(_speed_columns)}
        assert not columns & {"voided_at", "void_reason", "voided_by", "void_notified_at"}
    finally:
        await engine.dispose()


async def test_0013_adds_empty_near_copy_tables_with_the_hash_index(empty_url: str) -> None:
    """Submissions settled before 0013 are not fingerprinted after the fact: both tables start
    empty; the fingerprints are indexed by (server, task, hash); the downgrade drops both and
    keeps the rest."""
    engine = make_engine(empty_url)
    try:
        await migrate.upgrade(engine, "0012")
        async with engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO guilds (id, quest_channel_id, post_time, timezone, "
                    "weekly_post_day, created_at, updated_at, web_pages) "
                    "VALUES (:id, 1, '09:00', 'UTC', 0, :now, :now, false)"
                ),
                {"id": GUILD_ID, "now": timeline.now()},
            )
        await migrate.upgrade(engine)  # through 0013, and on to the head the models are
        async with engine.connect() as connection:
            for table in ("solution_fingerprints", "near_copies"):
                count = await connection.scalar(text(f"SELECT count(*) FROM {table}"))
                assert count == 0, table
            indexes = await connection.run_sync(
                lambda c: {
                    i["name"]: i["column_names"]
                    for i in inspect(c).get_indexes("solution_fingerprints")
                }
            )
            name = "ix_solution_fingerprints_task_hash"
            assert indexes[name] == ["guild_id", "task_ref", "hash", "submission_id", "member_id"]
            assert await connection.run_sync(_diff) == []
        await migrate.downgrade(engine, "0012")
        async with engine.connect() as connection:
            tables = await connection.run_sync(_tables)
            ids = (await connection.execute(text("SELECT id FROM guilds"))).scalars().all()
        assert not {"solution_fingerprints", "near_copies"} & tables
        assert list(ids) == [GUILD_ID]
    finally:
        await engine.dispose()
