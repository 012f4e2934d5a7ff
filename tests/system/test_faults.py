"""Discord misbehaving: gateway drops and resumes, REST 5xx and 429.

Each fault is injected into the loopback fake while the real bot runs; the
assertions count what Discord received, so "answered" and "posted" both mean
exactly once (a retried request must not become a second message or a
second XP grant).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, time, timedelta

import pytest
import pytest_asyncio

from fakediscord import User
from fakediscord.handle import InteractionHandle
from tests.bot.conftest import MONDAY, World, start_world
from tests.bot.test_schedule import _daily, _weekly
from tests.timeline import local

pytestmark = pytest.mark.asyncio(loop_scope="module")

CALLBACK = "POST /interactions/{interaction_id}/{token}/callback"
SEND = "POST /channels/{channel_id}/messages"
TUESDAY = MONDAY + timedelta(days=1)
#: every fault this module injects
INJECTED: list[str] = []


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    tmp = tmp_path_factory.mktemp("faults")
    async for started in start_world(tmp, workers=0, clock=True):
        started.set_time(local(MONDAY.date(), time(7, 0), UTC))  # before today's 09:00 post
        setup = await started.fake.invoke_slash(
            started.guild,
            started.quests,
            started.owner,
            "admin setup",
            options={"channel": started.quests, "time": "09:00"},
        )
        assert "The daily quest goes to" in (await setup.original()).content
        yield started
        print(f"faults injected: {len(INJECTED)}")


def _ledger_rows(world: World, learner: User) -> int:
    with sqlite3.connect(world.database) as db:
        return db.execute(
            "SELECT COUNT(*) FROM xp_ledger JOIN members ON members.id = xp_ledger.member_id "
            "WHERE members.user_id = ?",
            (learner.id,),
        ).fetchone()[0]


def _callbacks(world: World, handle: InteractionHandle) -> int:
    """Accepted responses to one interaction (a rejected retry is not an answer)."""
    return sum(
        1
        for r in world.fake.calls(CALLBACK)
        if f"/interactions/{handle.id}/" in r.path and r.status < 300
    )


async def _done_once(world: World) -> None:
    """A fresh learner runs /done; one answer, one ledger row."""
    learner = world.learner()
    handle = await world.fake.invoke_slash(
        world.guild, world.quests, learner, "done", options={"task": "go-brrrr/zero-to-hero"}
    )
    reply = await handle.wait_for(lambda m: not m.loading, timeout=15)
    assert "+20 XP" in reply.content
    assert await world.handled(handle) == 1  # the bot is done with it: no retry still to come
    assert _callbacks(world, handle) == 1
    assert _ledger_rows(world, learner) == 1


async def _drop(world: World) -> None:
    await world.fake.drop_gateway()


async def _drop_with_close_frame(world: World) -> None:
    await world.fake.drop_gateway(4000)  # "unknown error": discord.py resumes


async def _reconnect(world: World) -> None:
    await world.fake.request_reconnect()


async def _lose_session(world: World) -> None:
    old = world.fake.gateway.session
    await world.fake.drop_gateway(resumable=False)
    await world.fake.wait_until_connected(timeout=30, replacing=old)


@pytest.mark.parametrize(
    "fault",
    [_drop, _drop_with_close_frame, _reconnect, _lose_session],
    ids=["tcp-reset", "close-4000", "op7-reconnect", "session-lost"],
)
async def test_commands_are_answered_once_after_gateway_faults(
    world: World, fault: Callable[[World], Awaitable[None]]
) -> None:
    await fault(world)
    INJECTED.append(fault.__name__)
    await world.fake.wait_until_connected(timeout=30)
    await _done_once(world)


async def test_a_command_sent_while_disconnected_is_replayed_and_answered_once(
    world: World,
) -> None:
    await world.fake.wait_until_connected(timeout=30)
    await world.fake.drop_gateway()
    INJECTED.append("drop")
    await _done_once(world)  # dispatched into the backlog, delivered on RESUME


@pytest.mark.parametrize(
    ("status", "times"), [(429, 3), (500, 1), (502, 1)], ids=["429x3", "500", "502"]
)
async def test_commands_are_answered_once_through_rest_errors(
    world: World, status: int, times: int
) -> None:
    world.fake.inject_fault(status, route=CALLBACK, times=times)
    INJECTED.extend([f"{status} callback"] * times)
    rejected_before = len(world.fake.calls(CALLBACK, status=status))
    await _done_once(world)
    assert len(world.fake.calls(CALLBACK, status=status)) - rejected_before == times


async def test_scheduled_posts_are_made_once_through_rest_errors_and_a_drop(
    world: World,
) -> None:
    assert _daily(world) == [] and _weekly(world) == []
    # Monday 09:00 UTC: daily and weekly are both due; their sends meet a 429, a 500
    # and a gateway drop. Each post must still appear exactly once.
    world.fake.inject_fault(429, route=SEND, times=2)
    world.fake.inject_fault(500, route=SEND, times=1)
    INJECTED.extend(["429 send", "429 send", "500 send", "drop"])
    await world.fake.drop_gateway()
    world.set_time(local(MONDAY.date(), time(9, 0, 30), UTC))
    posted = await world.fake.wait_for_message(
        world.quests, lambda m: bool(_weekly(world)), timeout=20
    )
    assert posted is not None
    await world.settle()  # a whole pass after both posts: anything repeated would be in
    assert _daily(world) == [MONDAY.date().isoformat()]
    assert len(_weekly(world)) == 1
    assert len(world.fake.calls(SEND, status=429)) >= 2
    assert len(world.fake.calls(SEND, status=500)) == 1


async def test_the_next_day_posts_once_after_a_lost_session(world: World) -> None:
    old = world.fake.gateway.session
    await world.fake.drop_gateway(resumable=False)
    INJECTED.append("session-lost")
    world.fake.inject_fault(502, route=SEND, times=1)
    INJECTED.append("502 send")
    world.set_time(local(TUESDAY.date(), time(9, 0, 30), UTC))
    await world.fake.wait_until_connected(timeout=30, replacing=old)
    await world.fake.wait_for_message(
        world.quests, lambda m: TUESDAY.date().isoformat() in str(m.embeds), timeout=20
    )
    await world.settle()
    assert _daily(world) == [MONDAY.date().isoformat(), TUESDAY.date().isoformat()]
    assert len(_weekly(world)) == 1
