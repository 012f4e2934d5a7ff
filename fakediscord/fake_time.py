"""The fake's sense of time, which tests can push forward.

Interaction deadlines (3 s to answer, 15 min of token life) and attachment URL
expiry all read this clock, so a test can expire them at once instead of waiting.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime


class FakeClock:
    """Wall-clock seconds plus an offset that only ever grows."""

    def __init__(self) -> None:
        self._offset = 0.0

    def now(self) -> float:
        return time.time() + self._offset

    def advance(self, seconds: float) -> None:
        """Jump forward; deadlines measured from earlier instants move closer by ``seconds``."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self._offset += seconds

    def iso(self, at: float | None = None) -> str:
        """An ISO-8601 timestamp as Discord writes them."""
        moment = self.now() if at is None else at
        return datetime.fromtimestamp(moment, UTC).isoformat()
