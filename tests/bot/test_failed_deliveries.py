"""A verdict the bot cannot deliver is given up on loudly: an ERROR line in its log, and a
line in ``/admin deliveries`` that names the submission, the member and the last error."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio

from bot.delivery.failures import RETRIES
from tests import timeline
from tests.bot.conftest import World, start_world
from tests.bot.worker_verdicts import query

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    # No workers: the test writes the one verdict itself.
    async for started in start_world(tmp_path_factory.mktemp("failed"), workers=0):
        setup = await started.slash(started.owner, "admin setup", channel=started.quests)
        await setup.original()
        yield started


async def _until(check: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


async def test_nothing_failed_yet(world: World) -> None:
    reply = await (await world.slash(world.owner, "admin deliveries")).original()
    assert reply.ephemeral and reply.content.startswith("No failed deliveries")


async def test_a_verdict_given_up_on_is_logged_and_listed(world: World) -> None:
    learner = world.learner()
    assert (await world.submit_reply(learner)).startswith("Queued")
    ((submission_id,),) = query(world, "SELECT MAX(id) FROM submissions")
    # A verdict nobody can read, on its last try: the bot's next pass gives up on it.
    unreadable = json.dumps({"status": "passed", "score": 1.0})
    finished = timeline.now().strftime("%Y-%m-%d %H:%M:%S.%f")
    query(
        world,
        "UPDATE submissions SET status = 'passed', verdict = ?, finished_at = ?, "
        "delivery_attempts = ? WHERE id = ?",
        unreadable,
        finished,
        RETRIES.max_attempts - 1,
        submission_id,
    )
    await _until(
        lambda: query(
            world,
            "SELECT 1 FROM submissions WHERE id = ? AND delivery_failed_at IS NOT NULL",
            submission_id,
        ),
        30,
        f"submission {submission_id} to be marked failed",
    )
    logged = await _until(
        lambda: re.search(
            rf"ERROR .*submission {submission_id}: verdict delivery failed for good after "
            rf"{RETRIES.max_attempts} tries \(ref (\w+), settle\)",
            world.bot.output,
        ),
        10,
        "the ERROR log line",
    )
    assert isinstance(logged, re.Match)

    reply = await (await world.slash(world.owner, "admin deliveries")).original()
    assert reply.ephemeral
    line = reply.content.splitlines()[1]
    assert line.startswith(
        f"• #{submission_id} <@{learner.id}> `go-brrrr/matmul-three-ways`, "
        f"{RETRIES.max_attempts} tries, gave up <t:"
    )
    assert f"[{logged.group(1)}] settle: BadVerdict" in line
    assert not reply.pings.users  # named, not pinged

    nothing = [m for m in world.fake.dms_to(learner) if f"#{submission_id}" in m.content]
    assert not nothing


async def test_a_plain_member_cannot_list_failed_deliveries(world: World) -> None:
    learner = world.learner()
    world.fake.set_command_permission(world.guild, "admin", learner, allow=True)
    reply = await (await world.slash(learner, "admin deliveries")).original()
    assert reply.ephemeral and "Only moderators can use /admin" in reply.content
