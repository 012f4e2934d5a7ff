"""The launcher runs an unmodified discord.py program in a child process against the fake."""

from __future__ import annotations

import pytest

from tests.fakediscord import BotProcess
from tests.fakediscord.tests.conftest import Scene

ENTRY = "tests.fakediscord.tests.sample_bot:main"


async def test_a_bot_in_a_child_process_answers_through_the_fake(scene: Scene) -> None:
    assert scene.fake.urls is not None
    args = [scene.fake.token, str(scene.guild.id)]
    async with BotProcess(scene.fake.urls, args, entry=ENTRY) as process:
        try:
            await scene.fake.wait_until_connected(timeout=20)
        except TimeoutError:
            pytest.fail(f"the bot never connected:\n{process.output}")
        handle = await scene.fake.invoke_slash(
            scene.guild, scene.general, scene.alice, "upload", attachments=[("a.txt", b"hello")]
        )
        reply = await handle.original()
        assert reply.content == "got 5 bytes"
        assert reply.attachments[0].data == b"olleh"
    assert process.returncode == 130, process.output
    # Login went to the fake's REST API, not to discord.com.
    assert len(scene.fake.calls("GET /users/@me", status=200)) == 1
