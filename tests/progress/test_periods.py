"""Local periods and their keys, including daylight-saving days."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import pytest

from bot.progress.periods import (
    day_of,
    local_date,
    month_key,
    month_of,
    resolve_local,
    week_key,
    week_of,
)
from tests.progress.world import BERLIN, NEW_YORK


def test_keys() -> None:
    assert week_key(date(2026, 11, 29)) == "2026-W48"  # a Sunday: its Monday's week
    assert week_key(date(2026, 11, 30)) == "2026-W49"
    assert week_key(date(2024, 12, 31)) == "2025-W01"  # the ISO year of the Monday
    assert week_key(date(2027, 1, 3)) == "2026-W53"
    assert month_key(date(2026, 3, 9)) == "2026-03"


def test_local_date_uses_the_server_zone() -> None:
    late = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
    assert local_date(late, BERLIN) == date(2026, 11, 30)
    assert local_date(late, NEW_YORK) == date(2026, 11, 29)


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        local_date(datetime(2026, 1, 1), BERLIN)  # noqa: DTZ001 - the point of the test


def test_nonexistent_wall_time_resolves_to_the_end_of_the_gap() -> None:
    assert resolve_local(date(2026, 3, 29), time(2, 30), BERLIN) == datetime(
        2026, 3, 29, 1, 0, tzinfo=UTC
    )
    assert resolve_local(date(2026, 3, 8), time(2, 30), NEW_YORK) == datetime(
        2026, 3, 8, 7, 0, tzinfo=UTC
    )


def test_ambiguous_wall_time_resolves_to_its_first_occurrence() -> None:
    assert resolve_local(date(2026, 10, 25), time(2, 30), BERLIN) == datetime(
        2026, 10, 25, 0, 30, tzinfo=UTC
    )


def test_days_are_23_or_25_hours_across_dst() -> None:
    spring = day_of(date(2026, 3, 29), BERLIN)
    autumn = day_of(date(2026, 11, 1), NEW_YORK)
    assert spring.end - spring.start == timedelta(hours=23)
    assert autumn.end - autumn.start == timedelta(hours=25)
    assert spring.key == "2026-03-29"


def test_week_runs_monday_to_monday_local() -> None:
    week = week_of(date(2026, 3, 29), BERLIN)  # Sunday of the spring-forward week
    assert week.key == "2026-W13"
    assert week.start == datetime(2026, 3, 22, 23, 0, tzinfo=UTC)  # Mon 00:00 CET
    assert week.end == datetime(2026, 3, 29, 22, 0, tzinfo=UTC)  # Mon 00:00 CEST


def test_month_bounds() -> None:
    december = month_of(date(2026, 12, 31), NEW_YORK)
    assert december.key == "2026-12"
    assert december.start == datetime(2026, 12, 1, 5, 0, tzinfo=UTC)
    assert december.end == datetime(2027, 1, 1, 5, 0, tzinfo=UTC)
