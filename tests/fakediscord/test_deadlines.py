"""Discord's clock rules: 3 s for the first response, one initial response, 15 min of token."""

from __future__ import annotations

from typing import Any

import aiohttp

from fakediscord import InteractionHandle
from fakediscord.interaction_rules import RESPONSE_DEADLINE, TOKEN_LIFETIME
from tests.fakediscord.conftest import Scene
from tests.fakediscord.sample_bot import SampleBot


async def _post(scene: Scene, path: str, payload: dict[str, Any]) -> tuple[int, Any]:
    assert scene.fake.urls is not None
    async with (
        aiohttp.ClientSession() as session,
        session.post(scene.fake.urls.api + path, json=payload) as response,
    ):
        return response.status, await response.json()


async def test_a_late_first_response_is_unknown_interaction(scene: Scene, bot: SampleBot) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "late")
    scene.fake.clock.advance(RESPONSE_DEADLINE + 1)
    bot.release.set()
    refusal = await handle.rejected()
    assert (refusal.status, refusal.code) == (404, 10062)
    assert handle.response_type is None
    # The token died with the deadline: no follow-up can rescue it.
    status, body = await _post(scene, _webhook(scene, handle), {"content": "sorry"})
    assert (status, body["code"]) == (404, 10015)


async def test_a_second_initial_response_is_refused_with_40060(
    scene: Scene, bot: SampleBot
) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "ping")
    await handle.original()
    status, body = await _post(
        scene,
        f"/interactions/{handle.id}/{handle.token}/callback",
        {"type": 4, "data": {"content": "again"}},
    )
    assert (status, body["code"]) == (400, 40060)
    assert [m.content for m in scene.fake.messages_in(scene.general)] == ["pong"]


async def test_edits_after_15_minutes_fail_with_invalid_webhook_token(
    scene: Scene, bot: SampleBot
) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "later")
    await handle.acked()
    scene.fake.clock.advance(TOKEN_LIFETIME + 1)
    bot.release.set()
    refusal = await handle.rejected()
    assert (refusal.status, refusal.code) == (401, 50027)
    placeholder = await handle.wait_for(lambda m: True)
    assert placeholder.loading


async def test_follow_ups_work_within_the_token_lifetime(scene: Scene, bot: SampleBot) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "ping")
    await handle.original()
    scene.fake.clock.advance(TOKEN_LIFETIME - 60)
    status, body = await _post(scene, _webhook(scene, handle) + "?wait=1", {"content": "more"})
    assert status == 200 and body["content"] == "more"
    assert [m.content for m in handle.followups] == ["more"]


def _webhook(scene: Scene, handle: InteractionHandle) -> str:
    return f"/webhooks/{scene.fake.application_id}/{handle.token}"
