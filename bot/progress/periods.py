"""Local days, weeks and months in a server's time zone, and the keys that name them.

Rules:

- Every period is measured on the server's local clock (an IANA zone): a day runs from local
  midnight to the next, a week from Monday 00:00 local to the next Monday, a month from the 1st.
  Their length in real time varies across daylight-saving changes (23 or 25 hour days).
- Keys: a day is ``YYYY-MM-DD`` (its local date), a week ``YYYY-Www`` (the ISO week of its local
  Monday, so the year is the ISO year: Monday 2024-12-30 starts ``2025-W01``), a month
  ``YYYY-MM``.  Keys of one kind sort in time order, which the post log relies on.
- A local wall time that does not exist (inside a spring-forward gap) means the first real instant
  after the gap; one that exists twice (fall-back) means its first occurrence, so it happens once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

PeriodKind = Literal["day", "week", "month"]


def require_aware(moment: datetime) -> None:
    """Refuse naive datetimes: their zone would be a guess."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"naive datetime {moment!r}: pass a timezone-aware value")


def local_date(moment: datetime, tz: ZoneInfo) -> date:
    """The server-local calendar date of an instant."""
    require_aware(moment)
    return moment.astimezone(tz).date()


def resolve_local(day: date, at: time, tz: ZoneInfo) -> datetime:
    """The UTC instant a local wall-clock time names, per the gap and overlap rules above."""
    wall = datetime.combine(day, at, tzinfo=tz)  # fold=0: the first of two occurrences
    instant = wall.astimezone(UTC)
    if instant.astimezone(tz).replace(tzinfo=None) == wall.replace(tzinfo=None):
        return instant
    return _gap_end(wall)


def _gap_end(wall: datetime) -> datetime:
    """The instant a spring-forward gap containing ``wall`` ends (its transition).

    Read with the offset after the gap, ``wall`` lands before the transition; read with the
    offset before it, after.  Bisecting between the two finds the first second on the new offset.
    """
    early = wall.replace(fold=1).astimezone(UTC)
    late = wall.replace(fold=0).astimezone(UTC)
    new_offset = late.astimezone(wall.tzinfo).utcoffset()
    low, high = 0, int((late - early).total_seconds())
    while low < high:
        middle = (low + high) // 2
        if (early + timedelta(seconds=middle)).astimezone(wall.tzinfo).utcoffset() == new_offset:
            high = middle
        else:
            low = middle + 1
    return early + timedelta(seconds=low)


def day_key(day: date) -> str:
    return day.isoformat()


def monday_of(day: date) -> date:
    return day - timedelta(days=day.weekday())


def week_key(day: date) -> str:
    year, week, _ = monday_of(day).isocalendar()
    return f"{year:04d}-W{week:02d}"


def month_key(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


@dataclass(frozen=True)
class Period:
    """One local day, week or month: its key and its real-time bounds ``[start, end)`` in UTC."""

    kind: PeriodKind
    key: str
    start: datetime
    end: datetime


def day_of(day: date, tz: ZoneInfo) -> Period:
    return Period(
        "day",
        day_key(day),
        resolve_local(day, time(0), tz),
        resolve_local(day + timedelta(days=1), time(0), tz),
    )


def week_of(day: date, tz: ZoneInfo) -> Period:
    """The local week (Monday to Monday) that contains the local date ``day``."""
    monday = monday_of(day)
    return Period(
        "week",
        week_key(monday),
        resolve_local(monday, time(0), tz),
        resolve_local(monday + timedelta(days=7), time(0), tz),
    )


def month_of(day: date, tz: ZoneInfo) -> Period:
    first = day.replace(day=1)
    following = (first + timedelta(days=31)).replace(day=1)
    return Period(
        "month",
        month_key(first),
        resolve_local(first, time(0), tz),
        resolve_local(following, time(0), tz),
    )
