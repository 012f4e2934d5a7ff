"""A command used while the bot stops is answered, in the words the docs promise, and not run.

The client is the bot's own (``bot.app.BrrrBot``), offline: an interaction is handed to it as
the gateway would hand it over, before and after ``drain`` (the first step of a graceful stop).
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import discord
import pytest

#: what docs/learners/discord.md and docs/operators/operations.md tell members, written here
RESTARTING = "The bot is restarting; try again in a minute."

PAYLOAD: dict[str, Any] = {  # a /ping in a DM, as the gateway's INTERACTION_CREATE carries it
    "type": 2,
    "token": "interaction-token",
    "version": 1,
    "application_id": "1200000000000000001",
    "attachment_size_limit": 8 << 20,
    "user": {"id": "1300000000000000001", "username": "ada", "discriminator": "0", "avatar": None},
    "data": {"id": "1400000000000000001", "name": "ping", "type": 1},
    "channel": {"id": "1500000000000000001", "type": 1},
}


async def test_a_command_during_a_stop_is_told_the_bot_is_restarting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bot.app import BrrrBot
    from bot.background import Doorbell

    answered: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def send_message(self: object, content: str | None = None, **options: Any) -> None:
        await answered.put(("answer", (content, options.get("ephemeral"))))

    monkeypatch.setattr(discord.InteractionResponse, "send_message", send_message)
    bot = BrrrBot(SimpleNamespace(verdicts=Doorbell()))  # type: ignore[arg-type]
    await bot._async_setup_hook()  # the loop a logged-in client has; nothing is sent anywhere

    @bot.tree.command(name="ping", description="a command that says it ran")
    async def ping(interaction: discord.Interaction) -> None:
        await answered.put(("ran", interaction.id))

    handed: list[int] = []  # interactions handed to the command tree, as they are handed over
    hand = bot.tree._from_interaction
    monkeypatch.setattr(bot.tree, "_from_interaction", lambda i: (handed.append(i.id), hand(i)))
    try:
        # running: the interaction reaches its command (the payload is one the client takes)
        bot._connection.parsers["INTERACTION_CREATE"](dict(PAYLOAD, id="1100000000000000001"))
        assert handed == [1100000000000000001]
        assert await asyncio.wait_for(answered.get(), 10) == ("ran", 1100000000000000001)

        await bot.drain(timeout_s=1.0)  # the stop begins: no cog holds work in flight here
        bot._connection.parsers["INTERACTION_CREATE"](dict(PAYLOAD, id="1100000000000000002"))
        assert handed == [1100000000000000001], "the command tree got it during the stop"
        assert await asyncio.wait_for(answered.get(), 10) == ("answer", (RESTARTING, True))
    finally:
        await bot.close()
