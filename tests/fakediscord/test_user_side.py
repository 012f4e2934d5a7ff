"""The user side refuses what the Discord client would not let a user do, and builds the rest
with the details a bot relies on: permissions, DMs, selects, expiring attachment URLs."""

from __future__ import annotations

import aiohttp
import pytest

from fakediscord import Permission
from fakediscord.entities import MIB
from tests.fakediscord.conftest import Scene
from tests.fakediscord.sample_bot import SampleBot


async def test_a_global_command_works_in_a_dm(scene: Scene, bot: SampleBot) -> None:
    handle = await scene.fake.invoke_slash(None, None, scene.alice, "ping")
    assert (await handle.original()).content == "pong"
    assert handle.record.payload["context"] == 1
    assert [m.content for m in scene.fake.dms_to(scene.alice)] == ["pong"]


async def test_a_select_choice_reaches_the_view(scene: Scene, bot: SampleBot) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "quiz")
    question = await handle.original()
    with pytest.raises(ValueError, match="not among the options"):
        await scene.fake.select(question, "quiz:answer", ["O(n)"], user=scene.bob)
    choice = await scene.fake.select(question, "quiz:answer", ["O(n^3)"], user=scene.bob)
    answer = await choice.original()
    assert answer.content == "you chose O(n^3)" and answer.ephemeral


@pytest.mark.parametrize(
    ("name", "options", "attachments", "error"),
    [
        ("topic", {}, [], "required"),
        ("topic", {"name": "x", "colour": "red"}, [], "not options"),
        ("upload", {}, [("big.bin", b"0" * (10 * MIB + 1))], "upload limit"),
        ("admin", {}, [], "needs a subcommand"),
        ("admin nope", {}, [], "not a subcommand"),
    ],
)
async def test_invocations_the_client_would_not_allow_are_refused(
    scene: Scene,
    bot: SampleBot,
    name: str,
    options: dict[str, str],
    attachments: list[tuple[str, bytes]],
    error: str,
) -> None:
    with pytest.raises(ValueError, match=error):
        await scene.fake.invoke_slash(
            scene.guild, scene.general, scene.bob, name, options=options, attachments=attachments
        )


async def test_the_payload_carries_member_and_app_permissions(scene: Scene, bot: SampleBot) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.quiet, scene.bob, "ping")
    payload = handle.record.payload
    assert not int(payload["app_permissions"]) & Permission.SEND_MESSAGES
    assert int(payload["member"]["permissions"]) & Permission.MANAGE_GUILD
    assert payload["member"]["flags"] == 0
    assert payload["attachment_size_limit"] == 10 * MIB


async def test_attachment_urls_expire(scene: Scene, bot: SampleBot) -> None:
    handle = await scene.fake.invoke_slash(
        scene.guild, scene.general, scene.alice, "upload", attachments=[("a.txt", b"data")]
    )
    await handle.original()
    (attachment,) = handle.record.payload["data"]["resolved"]["attachments"].values()
    async with aiohttp.ClientSession() as session:
        async with session.get(attachment["url"]) as response:
            assert (response.status, await response.read()) == (200, b"data")
        scene.fake.clock.advance(25 * 3600)
        async with session.get(attachment["url"]) as response:
            assert response.status == 404
