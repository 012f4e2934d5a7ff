"""Gateway drops, HTTP failures and held answers: discord.py recovers, and the user still gets one
answer."""

from __future__ import annotations

from collections.abc import Awaitable

import pytest

from fakediscord.handle import InteractionHandle
from tests.fakediscord.conftest import Scene
from tests.fakediscord.sample_bot import SampleBot

CALLBACK = "POST /interactions/{interaction_id}/{token}/callback"
SEND = "POST /channels/{channel_id}/messages"


@pytest.mark.parametrize("close_code", [None, 4000], ids=["tcp-reset", "close-4000"])
async def test_a_dropped_gateway_resumes_and_replays_missed_events(
    scene: Scene, bot: SampleBot, close_code: int | None
) -> None:
    await scene.fake.drop_gateway(close_code)
    # Dispatched while the bot may still be away: the RESUME replays it.
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "ping")
    assert (await handle.original()).content == "pong"
    identified, resumed = scene.fake.gateway.connections
    assert (identified.outcome, resumed.outcome) == ("identified", "resumed")
    assert resumed.path == "/resume"


async def test_reconnect_op_7_is_followed_by_a_resume(scene: Scene, bot: SampleBot) -> None:
    await scene.fake.request_reconnect()
    await scene.fake.wait_until_connected()
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "ping")
    assert (await handle.original()).content == "pong"
    assert [c.outcome for c in scene.fake.gateway.connections] == ["identified", "resumed"]


async def test_an_invalid_session_makes_the_bot_identify_again(
    scene: Scene, bot: SampleBot
) -> None:
    first = await scene.fake.wait_until_connected()
    await scene.fake.invalidate_session(resumable=False)
    second = await scene.fake.wait_until_connected(replacing=first)
    assert second.id != first.id
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "ping")
    assert (await handle.original()).content == "pong"
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "ping")
    assert (await handle.original()).content == "pong"
    outcomes = [c.outcome for c in scene.fake.gateway.connections]
    assert outcomes == ["identified", "identified"]


async def test_a_refused_resume_falls_back_to_identify(scene: Scene, bot: SampleBot) -> None:
    first = await scene.fake.wait_until_connected()
    await scene.fake.drop_gateway(resumable=False)
    await scene.fake.wait_until_connected(replacing=first)
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "ping")
    assert (await handle.original()).content == "pong"
    outcomes = [c.outcome for c in scene.fake.gateway.connections]
    assert outcomes == ["identified", "invalid session", "identified"]


async def test_a_429_on_the_callback_is_retried_and_answered_once(
    scene: Scene, bot: SampleBot
) -> None:
    scene.fake.inject_fault(429, route=CALLBACK, retry_after=0.05)
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "ping")
    assert (await handle.original()).content == "pong"
    assert [r.status for r in scene.fake.calls(CALLBACK)] == [429, 200]
    assert len(scene.fake.messages_in(scene.general)) == 1


@pytest.mark.parametrize("status", [500, 502])
async def test_a_server_error_on_a_send_is_retried_and_posts_once(
    scene: Scene, bot: SampleBot, status: int
) -> None:
    scene.fake.inject_fault(status, route=SEND)
    await scene.fake.invoke_slash(
        scene.guild, scene.general, scene.alice, "announce", options={"text": "quest is up"}
    )
    posted = await scene.fake.wait_for_message(scene.general, lambda m: "quest" in m.content)
    assert posted.content == "quest is up"
    assert [r.status for r in scene.fake.calls(SEND)] == [status, 200]
    assert len(scene.fake.messages_in(scene.general)) == 1


async def test_a_fault_without_a_route_hits_the_next_request(scene: Scene, bot: SampleBot) -> None:
    scene.fake.inject_fault(429, retry_after=0.01)
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "ping")
    assert (await handle.original()).content == "pong"
    assert [r.status for r in scene.fake.calls(CALLBACK)] == [429, 200]


async def test_cleared_faults_do_not_fire(scene: Scene, bot: SampleBot) -> None:
    scene.fake.inject_fault(503, route=CALLBACK, times=3)
    scene.fake.clear_faults()
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "ping")
    assert (await handle.original()).content == "pong"
    assert [r.status for r in scene.fake.calls(CALLBACK)] == [200]


async def test_unknown_fault_routes_are_refused(scene: Scene) -> None:
    with pytest.raises(ValueError, match="no route"):
        scene.fake.inject_fault(500, route="POST /channels/{id}/messages")


async def test_a_held_response_is_carried_out_and_answered_on_release(
    scene: Scene, bot: SampleBot
) -> None:
    def announce(text: str) -> Awaitable[InteractionHandle]:
        return scene.fake.invoke_slash(
            scene.guild, scene.general, scene.alice, "announce", options={"text": text}
        )

    def sent() -> list[tuple[str, int]]:
        return [(r.payload["content"], r.status) for r in scene.fake.calls(SEND)]

    hold = scene.fake.hold_response(
        SEND, when=lambda record: record.payload["content"].startswith("quest"), after=1
    )
    for text in ("hello", "quest 1"):
        assert (await (await announce(text)).original()).content == "posted"
    waiting = await announce("quest 2")
    held = await hold.taken(5)
    assert (held.payload["content"], held.status) == ("quest 2", 200)
    # carried out and recorded, while the bot still waits for the answer to reply "posted"
    assert [m.content for m in scene.fake.messages_in(scene.general)][-1] == "quest 2"
    assert sent() == [("hello", 200), ("quest 1", 200), ("quest 2", 200)]
    assert len(scene.fake.calls(CALLBACK)) == 2
    hold.release()
    assert (await waiting.original()).content == "posted"
    # a hold keeps one response
    assert (await (await announce("quest 3")).original()).content == "posted"
    assert sent()[3:] == [("quest 3", 200)]
    assert len(scene.fake.messages_in(scene.general)) == 4
