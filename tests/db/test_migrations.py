"""The migration chain builds exactly the models, both ways, atomically, and keeps the rows
already stored (0009: speed results of the previous instrument stay, retired)."""

from __future__ import annotations

import hashlib
import itertools
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import Base, Submission
from bot.db.types import UTCDateTime
from bot.errors import DatabaseError
from bot.progress.periods import week_of
from bot.progress.speed_results import fastest_of_week, record_speed, speed_board, speed_task_refs
from graders.base import SPEED_INSTRUMENT, SpeedResult
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
