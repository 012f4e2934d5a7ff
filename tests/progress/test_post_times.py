"""Post times on the local clock, the period due now, the next fire time and catch-up."""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest

from bot.progress.post_times import PostSchedule, catch_up, parse_post_time


def berlin(post_time: str = "09:00", weekly_day: int = 0) -> PostSchedule:
    return PostSchedule.from_settings("Europe/Berlin", post_time, weekly_day)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_parse_post_time() -> None:
    assert parse_post_time(" 07:05 ") == time(7, 5)
    for bad in ("7:05", "24:00", "09:60", "nine"):
        with pytest.raises(ValueError, match="HH:MM"):
            parse_post_time(bad)


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="weekly day"):
        PostSchedule.from_settings("UTC", "09:00", 7)


def test_local_post_time_moves_in_utc_with_dst() -> None:
    schedule = berlin()
    winter = schedule.next_fire("daily_quest", utc(2026, 1, 15, 0, 0))
    summer = schedule.next_fire("daily_quest", utc(2026, 7, 15, 0, 0))
    assert (winter.key, winter.fire_at) == ("2026-01-15", utc(2026, 1, 15, 8, 0))
    assert (summer.key, summer.fire_at) == ("2026-07-15", utc(2026, 7, 15, 7, 0))
    assert winter.fire_at.tzinfo is UTC


def test_next_fire_across_the_spring_forward_night() -> None:
    schedule = berlin()
    after_saturday = schedule.next_fire("daily_quest", utc(2026, 3, 28, 8, 0))
    assert (after_saturday.key, after_saturday.fire_at) == ("2026-03-29", utc(2026, 3, 29, 7, 0))


def test_nonexistent_post_time_fires_when_the_gap_ends() -> None:
    schedule = berlin("02:30")
    fire = schedule.next_fire("daily_quest", utc(2026, 3, 28, 12, 0))
    assert (fire.key, fire.fire_at) == ("2026-03-29", utc(2026, 3, 29, 1, 0))  # 03:00 CEST
    assert schedule.due("daily_quest", utc(2026, 3, 29, 1, 0)).key == "2026-03-29"
    assert schedule.due("daily_quest", utc(2026, 3, 29, 0, 59)).key == "2026-03-28"


def test_ambiguous_post_time_fires_once() -> None:
    schedule = berlin("02:30")
    first = schedule.next_fire("daily_quest", utc(2026, 10, 24, 12, 0))
    assert (first.key, first.fire_at) == ("2026-10-25", utc(2026, 10, 25, 0, 30))  # 02:30 CEST
    # At the second 02:30 (CET) the day's post is already behind: the next one is tomorrow's.
    second_time = utc(2026, 10, 25, 1, 30)
    assert schedule.due("daily_quest", second_time).key == "2026-10-25"
    assert schedule.next_fire("daily_quest", second_time).key == "2026-10-26"


def test_due_is_today_once_the_post_time_passed_else_yesterday() -> None:
    schedule = berlin()
    assert schedule.due("daily_quest", utc(2026, 11, 29, 7, 59)).key == "2026-11-28"
    on_time = schedule.due("daily_quest", utc(2026, 11, 29, 8, 0))
    assert (on_time.key, on_time.fire_at) == ("2026-11-29", utc(2026, 11, 29, 8, 0))


def test_local_midnight_decides_the_day() -> None:
    schedule = berlin("00:30")
    # 23:45 UTC on the 29th is 00:45 on the 30th in Berlin: the 30th's post is due.
    assert schedule.due("daily_quest", utc(2026, 11, 29, 23, 45)).key == "2026-11-30"


def test_weekly_post_on_the_weekly_day_keyed_by_its_monday() -> None:
    schedule = berlin("18:00", weekly_day=6)  # Sundays
    now = utc(2026, 11, 25, 12, 0)  # Wednesday of 2026-W48
    assert schedule.due("weekly_leaderboard", now).key == "2026-W47"
    upcoming = schedule.next_fire("weekly_leaderboard", now)
    assert (upcoming.key, upcoming.fire_at) == ("2026-W48", utc(2026, 11, 29, 17, 0))
    after = schedule.due("weekly_leaderboard", utc(2026, 11, 29, 17, 0))
    assert after.key == "2026-W48"
    assert schedule.next_fire("weekly_leaderboard", upcoming.fire_at).key == "2026-W49"


def test_weekly_post_across_the_year_boundary() -> None:
    schedule = berlin(weekly_day=0)
    fire = schedule.next_fire("weekly_leaderboard", utc(2024, 12, 29, 12, 0))
    assert (fire.key, fire.fire_at) == ("2025-W01", utc(2024, 12, 30, 8, 0))


def test_catch_up_after_downtime_posts_only_the_latest_due_period() -> None:
    schedule = berlin()
    back_up = utc(2026, 11, 29, 10, 0)  # down since the 25th's post
    post = catch_up(schedule, "daily_quest", back_up, last_posted="2026-11-25")
    assert post is not None and post.key == "2026-11-29"
    # Back before today's post time: the one catch-up post is yesterday's.
    early = catch_up(schedule, "daily_quest", utc(2026, 11, 29, 6, 0), "2026-11-25")
    assert early is not None and early.key == "2026-11-28"


def test_catch_up_posts_nothing_when_the_latest_due_period_is_posted() -> None:
    schedule = berlin()
    assert catch_up(schedule, "daily_quest", utc(2026, 11, 29, 10, 0), "2026-11-29") is None
    assert catch_up(schedule, "weekly_leaderboard", utc(2026, 11, 30, 9, 0), "2026-W49") is None
    first_ever = catch_up(schedule, "weekly_leaderboard", utc(2026, 11, 30, 9, 0), None)
    assert first_ever is not None and first_ever.key == "2026-W49"
