"""Streak arithmetic on local dates and the daily bonus formula."""

from __future__ import annotations

from datetime import date, timedelta

from bot.progress.streaks import Streak, streak_bonus, streak_on

D = date(2026, 11, 20)


def days(*offsets: int) -> set[date]:
    return {D + timedelta(days=n) for n in offsets}


def test_current_streak_ends_today_or_yesterday() -> None:
    done = days(0, 1, 2)
    assert streak_on(done, D + timedelta(days=2)) == Streak(3, 3)
    assert streak_on(done, D + timedelta(days=3)) == Streak(3, 3)  # today not done yet
    assert streak_on(done, D + timedelta(days=4)) == Streak(0, 3)  # a day missed


def test_best_streak_is_the_longest_run() -> None:
    assert streak_on(days(0, 1, 2, 3, 5, 6, 9), D + timedelta(days=9)) == Streak(1, 4)
    assert streak_on(set(), D) == Streak(0, 0)


def test_bonus_grows_by_five_and_caps_at_25() -> None:
    assert [streak_bonus(n) for n in range(0, 9)] == [0, 0, 5, 10, 15, 20, 25, 25, 25]
