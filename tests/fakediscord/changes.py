"""Lets tests wait for "the bot did X" without sleeping and polling.

Every change to the fake's state bumps a generation; waiters re-check their
condition on each bump until it holds or time runs out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Changes:
    def __init__(self) -> None:
        self._event = asyncio.Event()

    def bump(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def until(self, check: Callable[[], T | None], timeout: float, what: str) -> T:
        """Returns ``check()``'s first non-None value; TimeoutError names ``what`` otherwise."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
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
