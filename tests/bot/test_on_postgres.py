"""The whole bot on PostgreSQL: same migrations, same commands, a worker over TCP.

The bot migrates an empty PostgreSQL database at start, its local worker claims with
SKIP LOCKED and wakes on NOTIFY, and XP lands in the same append-only ledger.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.bot.conftest import World, start_world
from tests.postgres_server import PostgresServer

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[World]:
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = await server.create_database(migrated=False)  # the bot migrates it at start
    env = {"DATABASE_URL": url}
    async for started in start_world(tmp_path_factory.mktemp("pg"), workers=1, extra_env=env):
        yield started


async def test_submit_grades_and_pays_on_postgresql(world: World) -> None:
    learner = world.learner()
    handle = await world.submit(learner)
    assert await handle.acked() < 3
    verdict = await handle.wait_for(lambda m: m.content.startswith("Passed"), timeout=90)
    assert "+60 XP" in verdict.content
    done = await world.slash(learner, "done", task="go-brrrr/matrix-drill")
    assert "+10 XP" in (await done.original()).content
    again = await world.slash(learner, "done", task="go-brrrr/matrix-drill")
    assert "already" in (await again.original()).content
    board = await world.slash(learner, "leaderboard", period="all")
    reply = await board.original()
    text = reply.content + "".join(e.get("description", "") for e in reply.embeds)
    assert learner.username in text and "70" in text
