"""A daily discussion thread's name: the local date and the quest, within Discord's 100."""

from __future__ import annotations

from datetime import date

from bot.daily_threads import NAME_LIMIT, thread_name


def test_the_name_is_the_day_and_the_quest_on_one_line() -> None:
    assert thread_name(date(2026, 12, 3), "The roofline") == "Day 2026-12-03 · The roofline"
    assert thread_name(date(2026, 12, 3), "Two\nlines  here") == "Day 2026-12-03 · Two lines here"


def test_a_long_title_is_cut_to_the_limit_with_an_ellipsis() -> None:
    name = thread_name(date(2026, 12, 3), "x" * 300)
    assert len(name) == NAME_LIMIT
    assert name.startswith("Day 2026-12-03 · xxx") and name.endswith("…")
