"""The whole bot on PostgreSQL: same migrations, same commands, a worker over TCP.

The bot migrates an empty PostgreSQL database at start, queuing a submission NOTIFYs
the workers' channel with the job's id, its local worker LISTENs there, and XP lands in
a ledger that refuses UPDATE and DELETE.  That the claim skips rows locked by another
claimer (SKIP LOCKED) is shown on PostgreSQL by ``tests/jobs/test_queue.py``, and
that a NOTIFY wakes a waiting worker by ``tests/worker/test_wakeup.py``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import asyncpg
import pytest
import pytest_asyncio

from bot.db import migrate
from bot.jobs.queue import JOBS_CHANNEL
from tests.bot.conftest import World, start_world
from tests.bot.test_admin import ADDED_QUEST, _publish
from tests.postgres_server import PostgresServer
from tests.support import SOLUTIONS

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def database_dsn(request: pytest.FixtureRequest) -> str:
    """The empty database the bot is given, as a plain asyncpg DSN for looking inside."""
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = await server.create_database(migrated=False)  # the bot migrates it at start
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(
    database_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[World]:
    url = database_dsn.replace("postgresql://", "postgresql+asyncpg://", 1)
    env = {"DATABASE_URL": url}
    async for started in start_world(tmp_path_factory.mktemp("pg"), workers=1, extra_env=env):
        yield started


@pytest_asyncio.fixture(loop_scope="module")
async def db(database_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(database_dsn)
    yield connection
    await connection.close()


async def test_the_bot_migrated_the_empty_database(world: World, db: asyncpg.Connection) -> None:
    assert await db.fetchval("SELECT version_num FROM alembic_version") == migrate.head_revision()


async def test_submit_grades_and_pays_on_postgresql(world: World, db: asyncpg.Connection) -> None:
    notified: asyncio.Queue[str] = asyncio.Queue()
    await db.add_listener(JOBS_CHANNEL, lambda *args: notified.put_nowait(args[3]))
    learner = world.learner()
    handle = await world.submit(learner)
    assert await handle.acked() < 3
    verdict = await handle.wait_for(lambda m: m.content.startswith("Passed"), timeout=90)
    assert "+60 XP" in verdict.content
    job_id = await db.fetchval(
        "SELECT grading_jobs.id FROM grading_jobs "
        "JOIN submissions ON submissions.id = grading_jobs.submission_id "
        "JOIN members ON members.id = submissions.member_id WHERE members.user_id = $1",
        learner.id,
    )
    payloads: list[str] = []  # the NOTIFY went out at the commit, before the verdict
    try:
        async with asyncio.timeout(10):
            while str(job_id) not in payloads:
                payloads.append(await notified.get())
    except TimeoutError:
        raise AssertionError(f"no NOTIFY on {JOBS_CHANNEL} for job {job_id}: {payloads}") from None
    assert f"listening for new jobs on channel {JOBS_CHANNEL}" in world.bot.output

    done = await world.slash(learner, "done", task="go-brrrr/matrix-drill")
    assert "+10 XP" in (await done.original()).content
    again = await world.slash(learner, "done", task="go-brrrr/matrix-drill")
    assert "already" in (await again.original()).content
    member_id = await db.fetchval("SELECT id FROM members WHERE user_id = $1", learner.id)
    ledger = "SELECT source, amount FROM xp_ledger WHERE member_id = $1 ORDER BY id"
    assert [tuple(row) for row in await db.fetch(ledger, member_id)] == [
        ("task", 60),
        ("self", 10),
    ]
    board = await world.slash(learner, "leaderboard", period="all")
    reply = await board.original()
    text = reply.content + "".join(e.get("description", "") for e in reply.embeds)
    mine = re.search(rf"{re.escape(learner.username)}, you are #\d+ with ([\d,]+) XP\.", text)
    assert mine and int(mine[1].replace(",", "")) == 70, text


async def test_the_ledger_refuses_update_and_delete(world: World, db: asyncpg.Connection) -> None:
    learner = world.learner()
    done = await world.slash(learner, "done", task="go-brrrr/zero-to-hero")
    assert "+20 XP" in (await done.original()).content
    member_id = await db.fetchval("SELECT id FROM members WHERE user_id = $1", learner.id)
    for statement in (
        "UPDATE xp_ledger SET amount = 1000 WHERE member_id = $1",
        "DELETE FROM xp_ledger WHERE member_id = $1",
    ):
        with pytest.raises(asyncpg.PostgresError, match="append-only"):
            await db.execute(statement, member_id)
    amounts = await db.fetch("SELECT amount FROM xp_ledger WHERE member_id = $1", member_id)
    assert [row["amount"] for row in amounts] == [20]


async def test_a_quest_added_before_setup_is_graded_and_pays_on_postgresql(
    world: World, db: asyncpg.Connection
) -> None:
    # Published before any /admin setup (the server has no settings row yet), then graded by
    # the local worker from the job's own spec: nothing of this quest is in quests/.
    await _publish(world, ADDED_QUEST)
    learner = world.learner()
    handle = await world.submit(
        learner, (SOLUTIONS / "correct.py").read_bytes(), task="matmul-again/three-ways"
    )
    verdict = await handle.wait_for(lambda m: m.content.startswith(("Passed", "Error")), 90)
    assert verdict.content.startswith("Passed") and "+45 XP" in verdict.content, verdict.content
    member_id = await db.fetchval("SELECT id FROM members WHERE user_id = $1", learner.id)
    rows = await db.fetch(
        "SELECT source, amount, reference FROM xp_ledger WHERE member_id = $1", member_id
    )
    assert [tuple(row) for row in rows] == [("task", 45, "matmul-again/three-ways")]
    spec = await db.fetchval(
        "SELECT spec FROM grading_jobs JOIN submissions ON submissions.id = submission_id "
        "WHERE submissions.member_id = $1",
        member_id,
    )
    assert '"grader": "matmul_three_ways"' in spec  # the job carried what grading needed
