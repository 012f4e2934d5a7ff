"""Snowflake ids and secret tokens.

Ids carry their creation time like Discord's, so discord.py's ``created_at``
helpers give sensible answers, and they strictly increase so ordering by id is
ordering by creation.
"""

from __future__ import annotations

import secrets

from fakediscord.fake_time import FakeClock

DISCORD_EPOCH_MS = 1_420_070_400_000


class Snowflakes:
    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock
        self._last = 0

    def next(self) -> int:
        stamp = (int(self._clock.now() * 1000) - DISCORD_EPOCH_MS) << 22
        self._last = max(stamp, self._last + 1)
        return self._last


def new_token() -> str:
    """An opaque token, URL-safe because it appears in webhook paths."""
    return secrets.token_urlsafe(24)
