"""Moments for tests that move a clock: always relative to the real now, never fixed dates.

A test that pins the bot's clock must keep working next year, so it asks for "the Monday after
next", "the next spring-forward in Berlin" or "09:00 local on that day" instead of writing a
date down.  Every helper returns an aware UTC datetime.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
TOKYO = ZoneInfo("Asia/Tokyo")

_HOUR = timedelta(hours=1)
_HORIZON = timedelta(days=400)  # every zone these tests use changes its offset within a year


def now() -> datetime:
    return datetime.now(UTC)


def monday_after(moment: datetime, *, days: int = 0) -> datetime:
    """00:00 UTC of the first Monday at least ``days`` days after ``moment``."""
    earliest = (moment.astimezone(UTC) + timedelta(days=days)).date()
    monday = earliest + timedelta(days=(7 - earliest.weekday()) % 7)
    return datetime.combine(monday, time(0, 0), UTC)


def local(day: date, at: time, zone: ZoneInfo) -> datetime:
    """Wall-clock ``at`` on ``day`` in ``zone`` (the first, for an ambiguous time), in UTC."""
    return datetime.combine(day, at, zone).astimezone(UTC)


def local_day(moment: datetime, zone: ZoneInfo) -> date:
    return moment.astimezone(zone).date()


def transition(zone: ZoneInfo, after: datetime, *, forward: bool) -> datetime:
    """The first instant after ``after`` at which ``zone``'s clocks jump forward (or back)."""
    start = after.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    moment = start
    while moment - start < _HORIZON:
        before, later = _offset(zone, moment), _offset(zone, moment + _HOUR)
        if later != before and (later > before) == forward:
            return _bisect(zone, moment, moment + _HOUR)
        moment += _HOUR
    raise AssertionError(f"{zone.key} has no {'spring' if forward else 'fall'} change in a year")


def _offset(zone: ZoneInfo, moment: datetime) -> timedelta:
    offset = moment.astimezone(zone).utcoffset()
    assert offset is not None
    return offset


def _bisect(zone: ZoneInfo, low: datetime, high: datetime) -> datetime:
    """The change between ``low`` (old offset) and ``high`` (new offset), to the second."""
    old = _offset(zone, low)
    seconds_low, seconds_high = 0, int((high - low).total_seconds())
    while seconds_high - seconds_low > 1:
        middle = (seconds_low + seconds_high) // 2
        if _offset(zone, low + timedelta(seconds=middle)) == old:
            seconds_low = middle
        else:
            seconds_high = middle
    return low + timedelta(seconds=seconds_high)
