"""Restart backoff for supervised processes: quick after a rare crash, slow in a crash loop.

A process that dies is restarted after ``first_s``; each further death doubles the wait up to
``max_s``, so a pool that cannot start (a broken sandbox, a full disk) is retried about once a
minute instead of spinning.  A run that lasted ``healthy_after_s`` counts as healthy: the next
death starts again from ``first_s``, so one crash a day is always repaired within a second.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FIRST_S = 1.0
MAX_S = 60.0
HEALTHY_AFTER_S = 60.0


@dataclass
class Backoff:
    first_s: float = FIRST_S
    max_s: float = MAX_S
    healthy_after_s: float = HEALTHY_AFTER_S
    _next_s: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self._next_s = self.first_s

    def delay(self, ran_for_s: float) -> float:
        """How long to wait before the next start, after a run that lasted ``ran_for_s``."""
        if ran_for_s >= self.healthy_after_s:
            self._next_s = self.first_s
        delay = self._next_s
        self._next_s = min(self._next_s * 2, self.max_s)
        return delay
