"""Held responses: Discord did what a request asked, but its answer has not reached the bot.

A hold matches one request (the first one ``when`` accepts, once ``after`` such requests have
gone through).  That request is answered as usual: its change is made and recorded in the
journal, and waiters are told; only the HTTP response is kept back until the hold is released.
So a test can kill the bot at the one moment a crash leaves it not knowing whether Discord took
a message: sent, and not yet heard back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from fakediscord.changes import Changes
from fakediscord.journal import RequestRecord


class HeldResponse:
    """One hold: ``taken`` waits for the request it keeps; ``release`` lets its answer go."""

    def __init__(self, changes: Changes, when: Callable[[RequestRecord], bool], after: int) -> None:
        self._changes = changes
        self._when = when
        self._after = after
        self._released = asyncio.Event()
        #: the request being held (already applied and in the journal); None until one came
        self.record: RequestRecord | None = None

    def matches(self, record: RequestRecord) -> bool:
        """Whether this hold keeps ``record``'s response (counting the ``after`` it lets pass)."""
        if self.record is not None or not self._when(record):
            return False
        if self._after > 0:
            self._after -= 1
            return False
        self.record = record
        return True

    async def keep(self) -> None:
        """In the request's handler: until released (or the fake stops)."""
        await self._released.wait()

    async def taken(self, timeout: float) -> RequestRecord:
        """The held request, once there is one; fails at once if a watched bot exits first."""
        return await self._changes.until(lambda: self.record, timeout, "a request to hold")

    def release(self) -> None:
        self._released.set()


class Holds:
    """Every hold of a fake, taken or not, so that stopping the fake releases them all."""

    def __init__(self) -> None:
        self._holds: list[HeldResponse] = []

    def add(self, hold: HeldResponse) -> None:
        self._holds.append(hold)

    def take(self, record: RequestRecord) -> HeldResponse | None:
        """The hold that keeps ``record``'s response, if any (a hold keeps one request)."""
        return next((hold for hold in self._holds if hold.matches(record)), None)

    def release_all(self) -> None:
        for hold in self._holds:
            hold.release()
