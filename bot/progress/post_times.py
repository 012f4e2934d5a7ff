"""When the daily quest and the weekly leaderboard are posted, and which period a post is for.

Rules:

- The daily post for local date D fires at the server's post time (``HH:MM``, local) on D; its
  period key is ``YYYY-MM-DD``.  The weekly post fires at the same time on the server's weekly
  day (Monday = 0) and its key is the ISO week of that week's local Monday, ``YYYY-Www``.
- Fire times are computed on the local clock, so a 09:00 Europe/Berlin post is 08:00 UTC in
  winter and 07:00 UTC in summer.  A post time that does not exist that day (02:30 on a
  spring-forward day) fires when the gap ends; one that exists twice fires at its first
  occurrence only.
- The period due now is the latest one whose fire time has passed: today's once today's post time
  has passed, yesterday's before that.
- Catch-up: after downtime only that latest due period is posted, once: missed periods before it
  are skipped, so a bot that was down for three days makes one catch-up post, not three.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from bot.progress.periods import (
    day_key,
    local_date,
    monday_of,
    require_aware,
    resolve_local,
    week_key,
)

PostKind = Literal["daily_quest", "weekly_leaderboard"]

_HH_MM = re.compile(r"(?P<hour>[01]\d|2[0-3]):(?P<minute>[0-5]\d)")


def parse_post_time(text: str) -> time:
    """``"09:00"`` -> 09:00; the stored setting is 24-hour ``HH:MM``."""
    match = _HH_MM.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a time of day; expected HH:MM, e.g. 09:00")
    return time(int(match["hour"]), int(match["minute"]))


@dataclass(frozen=True)
class Occurrence:
    """One scheduled post: what it is for (``key``) and when it fires (aware UTC)."""

    kind: PostKind
    key: str
    fire_at: datetime


@dataclass(frozen=True)
class PostSchedule:
    """A server's posting settings, as stored on its guild row."""

    tz: ZoneInfo
    post_time: time
    weekly_day: int  # Monday = 0

    @classmethod
    def from_settings(cls, timezone: str, post_time: str, weekly_day: int) -> PostSchedule:
        if not 0 <= weekly_day <= 6:
            raise ValueError(f"weekly day {weekly_day} is not 0 (Monday) to 6 (Sunday)")
        return cls(ZoneInfo(timezone), parse_post_time(post_time), weekly_day)

    def _occurrence(self, kind: PostKind, anchor: date) -> Occurrence:
        """The post of ``kind`` for the day (daily) or the week starting Monday (weekly)."""
        if kind == "daily_quest":
            return Occurrence(kind, day_key(anchor), resolve_local(anchor, self.post_time, self.tz))
        fire_day = anchor + timedelta(days=self.weekly_day)
        return Occurrence(kind, week_key(anchor), resolve_local(fire_day, self.post_time, self.tz))

    def _anchor(self, kind: PostKind, now: datetime) -> tuple[date, timedelta]:
        """The anchor date of the post around ``now`` and the step to its neighbours."""
        require_aware(now)
        today = local_date(now, self.tz)
        if kind == "daily_quest":
            return today, timedelta(days=1)
        return monday_of(today), timedelta(days=7)

    def due(self, kind: PostKind, now: datetime) -> Occurrence:
        """The latest post whose fire time is at or before ``now``."""
        anchor, step = self._anchor(kind, now)
        current = self._occurrence(kind, anchor)
        return current if current.fire_at <= now else self._occurrence(kind, anchor - step)

    def next_fire(self, kind: PostKind, now: datetime) -> Occurrence:
        """The first post whose fire time is after ``now``: when to wake up next."""
        anchor, step = self._anchor(kind, now)
        current = self._occurrence(kind, anchor)
        return current if current.fire_at > now else self._occurrence(kind, anchor + step)


def catch_up(
    schedule: PostSchedule, kind: PostKind, now: datetime, last_posted: str | None
) -> Occurrence | None:
    """The one post to make now, or None when the latest due period is already posted.

    ``last_posted`` is the newest period key of this kind in the post log (keys sort in time
    order).  Everything missed before the latest due period is skipped on purpose.
    """
    due = schedule.due(kind, now)
    if last_posted is not None and last_posted >= due.key:
        return None
    return due
