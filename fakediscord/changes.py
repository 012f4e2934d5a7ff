"""Lets tests wait for "the bot did X" without sleeping and polling.

Every change to the fake's state bumps a generation; waiters re-check their
condition on each bump until it holds or time runs out.  A guard (e.g. "the bot process
is still running") is checked with every condition: when it fails, every waiter fails at
once with its reason instead of running into its timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Changes:
    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._guards: list[Callable[[], str | None]] = []

    def guard(self, reason: Callable[[], str | None]) -> None:
        """Fail every wait while ``reason()`` returns a reason; call ``bump`` when it may have."""
        self._guards.append(reason)

    def bump(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def until(self, check: Callable[[], T | None], timeout: float, what: str) -> T:
        """Returns ``check()``'s first non-None value; TimeoutError names ``what`` otherwise."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            for guard in self._guards:
                if (reason := guard()) is not None:
                    raise AssertionError(f"{reason} (while waiting for {what})")
            found = check()
            if found is not None:
                return found
            left = deadline - loop.time()
            if left <= 0:
                raise TimeoutError(f"gave up after {timeout:g} s waiting for {what}")
            try:
                await asyncio.wait_for(self._event.wait(), left)
            except TimeoutError:
                continue
