"""The launcher runs an unmodified discord.py program in a child process against the fake."""

from __future__ import annotations

import time

import pytest

from fakediscord import BotProcess
from tests.fakediscord.conftest import Scene

ENTRY = "tests.fakediscord.sample_bot:main"


async def test_a_bot_in_a_child_process_answers_through_the_fake(scene: Scene) -> None:
    assert scene.fake.urls is not None
    args = [scene.fake.token, str(scene.guild.id)]
    process = BotProcess(scene.fake.urls, args, entry=ENTRY)
    scene.fake.watch(process)
    async with process:
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
    # It was stopped on purpose: waits after that are not failed for its exit.
    with pytest.raises(TimeoutError):
        await scene.fake.wait_for_message(scene.general, lambda m: False, timeout=0.1)
    # Login went to the fake's REST API, not to discord.com.
    assert len(scene.fake.calls("GET /users/@me", status=200)) == 1


async def test_a_watched_program_that_dies_fails_the_wait_at_once_naming_why(
    scene: Scene,
) -> None:
    # A bot that crashes at start (here: a bad entry point) must not cost a test its timeout.
    process = BotProcess(scene.fake.urls, [], entry="tests.fakediscord.sample_bot:nowhere")
    scene.fake.watch(process)
    async with process:
        started = time.monotonic()
        with pytest.raises(AssertionError) as failure:
            await scene.fake.wait_until_connected(timeout=60)
        waited = time.monotonic() - started
        message = str(failure.value)
    assert "the bot process exited (code 1)" in message
    assert "AttributeError" in message and "nowhere" in message  # its last line says why
    assert "a bot to connect to the gateway" in message
    assert waited < 30  # the import alone takes a few seconds on a loaded machine; not 60


async def test_a_program_that_ignores_ctrl_c_is_killed_showing_where_it_was(
    scene: Scene,
) -> None:
    assert scene.fake.urls is not None
    process = BotProcess(scene.fake.urls, [], entry="tests.fakediscord.sample_bot:stubborn")
    await process.start()
    await process.wait_for_output("ignoring Ctrl-C", timeout=30)
    assert await process.stop(grace=0.5) == -9
    assert "still running 0.5 s after Ctrl-C; its stacks:" in process.output
    assert "in stubborn" in process.output  # the Python stack of the stuck call
