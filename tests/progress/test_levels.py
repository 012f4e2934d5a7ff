"""Levels follow the documented curve: 25 * L * (L - 1) total XP to reach level L."""

from __future__ import annotations

import pytest

from bot.progress.levels import level_change, level_for, progress, xp_for_level


def test_curve_thresholds() -> None:
    assert [xp_for_level(level) for level in range(1, 7)] == [0, 50, 150, 300, 500, 750]


@pytest.mark.parametrize(
    ("total", "level"),
    [(-10, 1), (0, 1), (49, 1), (50, 2), (149, 2), (150, 3), (299, 3), (300, 4), (500, 5)],
)
def test_level_for(total: int, level: int) -> None:
    assert level_for(total) == level


def test_level_for_agrees_with_the_curve_everywhere() -> None:
    for level in range(1, 400):
        start = xp_for_level(level)
        assert level_for(start) == level
        assert level_for(start - 1) == max(level - 1, 1)


def test_progress_to_next_level() -> None:
    at = progress(180)  # level 3 spans 150..299
    assert (at.level, at.into, at.span, at.to_next) == (3, 30, 150, 120)
    assert progress(0) == progress(-5)


def test_level_change_detects_level_ups_only_upwards() -> None:
    assert level_change(40, 160).leveled_up
    assert (level_change(40, 160).old_level, level_change(40, 160).new_level) == (1, 3)
    assert not level_change(40, 49).leveled_up
    assert not level_change(160, 40).leveled_up


def test_level_zero_does_not_exist() -> None:
    with pytest.raises(ValueError, match="start at 1"):
        xp_for_level(0)
