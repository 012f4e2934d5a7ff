"""What the bot under test has finished doing, so a test waits for the event instead of sleeping.

The launcher (``--events FILE``) appends one line per finished unit of work:

    pass PID N       the bot's scheduled-post loop finished its N-th pass (N counts pass starts)
    handled PID ID   the bot finished handling interaction ID (its reply and any error reply sent)

A test that moved the bot's clock waits for a pass that *began* after the move; a test that
asserts "no duplicate" waits until the interaction was handled.  This is harness
instrumentation like ``--clock-file``: nothing in the bot knows about it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

POLL_S = 0.02


class EventWriter:
    """The bot side: appends whole lines (one ``write`` each, so a reader never sees half)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._passes = 0

    def _line(self, kind: str, value: int) -> None:
        os.write(self._fd, f"{kind} {os.getpid()} {value}\n".encode())

    def counting_passes(self, tick: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
        """Wrap the scheduled-post loop's pass; a pass that raised is not reported."""

        async def counted() -> None:
            self._passes += 1
            number = self._passes
            await tick()
            self._line("pass", number)

        return counted

    def handled(self, interaction_id: int) -> None:
        self._line("handled", interaction_id)


def install(path: Path) -> None:
    """Report schedule passes and handled interactions of the discord.py program to ``path``."""
    from discord import app_commands
    from discord.ext import commands

    writer = EventWriter(path)
    add_cog = commands.Bot.add_cog

    async def add_cog_reporting(self: commands.Bot, cog: commands.Cog, /, **options: Any) -> None:
        if type(cog).__name__ == "Schedule":
            cog.tick = writer.counting_passes(cog.tick)  # type: ignore[attr-defined]
        await add_cog(self, cog, **options)

    from_interaction = app_commands.CommandTree._from_interaction

    def from_interaction_reporting(tree: app_commands.CommandTree, interaction: Any) -> None:
        # discord.py runs each interaction in a task of its own; follow it to its end.
        before = asyncio.all_tasks()
        from_interaction(tree, interaction)
        for task in asyncio.all_tasks() - before:
            task.add_done_callback(lambda _: writer.handled(interaction.id))

    commands.Bot.add_cog = add_cog_reporting  # type: ignore[method-assign]
    app_commands.CommandTree._from_interaction = from_interaction_reporting  # type: ignore[method-assign]


class BotEvents:
    """The test side: read what the bot process with ``pid`` reported."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _lines(self) -> list[list[str]]:
        with contextlib.suppress(FileNotFoundError):
            text = self.path.read_text()
            return [line.split() for line in text.splitlines(keepends=True) if line.endswith("\n")]
        return []

    def passes(self, pid: int) -> int:
        """The number (by start) of the latest finished schedule pass of process ``pid``."""
        numbers = [int(w[2]) for w in self._lines() if w[:2] == ["pass", str(pid)]]
        return max(numbers, default=0)

    def handled(self, interaction_id: int) -> int:
        """How many times any bot process finished handling the interaction."""
        return sum(1 for w in self._lines() if w[0] == "handled" and w[2] == str(interaction_id))

    async def wait(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() >= deadline:
                raise AssertionError(f"the bot did not report {what} within {timeout:g} s")
            await asyncio.sleep(POLL_S)

    async def next_pass(self, pid: int, timeout: float = 20) -> None:
        """Until a schedule pass of ``pid`` that began after this call has finished.

        The pass after the one that may be running now is the first that surely began later.
        """
        seen = self.passes(pid)
        await self.wait(
            lambda: self.passes(pid) >= seen + 2, timeout, f"a scheduled-post pass (pid {pid})"
        )

    async def until_handled(self, interaction_id: int, timeout: float = 20) -> None:
        await self.wait(
            lambda: self.handled(interaction_id) > 0,
            timeout,
            f"the end of handling interaction {interaction_id}",
        )
