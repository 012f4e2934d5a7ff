"""Streaks: consecutive local days with at least one completed task, and the daily bonus.

Rules:

- A completion is an award of task XP: a passing verdict that added XP (a first pass or a
  better score) or a first ``/done``.  Re-submitting an already counted result adds nothing and so
  does not keep a streak alive; moderator grants and streak bonuses never count.
- Days are the server's local calendar days (its IANA zone), so a streak is right across local
  midnight and across daylight-saving changes: a 23-hour or 25-hour day is still one day.
- The current streak is the run of consecutive days ending today, or ending yesterday when
  nothing is done yet today (the streak is still alive until today ends).  The best streak is
  the longest run ever.
- Bonus: on day n of a streak (n >= 2) the first completion that day adds
  ``min(5 * (n - 1), 25)`` XP (5 on day 2, 10 on day 3, ... 25 from day 6 on), once per member per
  local day.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, timedelta

BONUS_PER_DAY = 5
BONUS_CAP = 25
_DAY = timedelta(days=1)


@dataclass(frozen=True)
class Streak:
    current: int
    best: int


def run_ending(days: Collection[date], last: date) -> int:
    """How many consecutive days end at ``last`` (0 when ``last`` is not one of them)."""
    length = 0
    while last - length * _DAY in days:
        length += 1
    return length


def streak_on(days: Collection[date], today: date) -> Streak:
    """The current and best streak as of the local date ``today``."""
    day_set = set(days)
    current = run_ending(day_set, today) or run_ending(day_set, today - _DAY)
    best = max(
        (run_ending(day_set, day) for day in day_set if day + _DAY not in day_set), default=0
    )
    return Streak(current, best)


def streak_bonus(day_of_streak: int) -> int:
    """The bonus for the first completion on day ``day_of_streak`` of a streak."""
    if day_of_streak < 2:
        return 0
    return min(BONUS_PER_DAY * (day_of_streak - 1), BONUS_CAP)
