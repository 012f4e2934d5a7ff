"""The bot's notion of "now": one function, so schedules can be tested under time control.

Production reads the system clock.  A test harness may call ``set_source`` (the
loopback launcher does, from a file the test advances); nothing in the bot does.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

#: how often time-based work (scheduled posts) looks at the clock again
RECHECK_S = 20.0

_source: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731


def now() -> datetime:
    """The current time, timezone-aware UTC."""
    return _source()


def set_source(source: Callable[[], datetime]) -> Callable[[], datetime]:
    """Make ``source`` the clock; returns the one it replaces (to put back)."""
    global _source
    previous, _source = _source, source
    return previous
