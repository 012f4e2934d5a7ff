"""The profile card and the weekly chart are valid PNGs of a fixed size for any input."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from bot.presentation.fonts import fitting_size
from bot.presentation.images import (
    ACCENT,
    CARD_SIZE,
    CHART_SIZE,
    MEDAL_COLOURS,
    TRACK,
    profile_card,
    weekly_chart,
)
from bot.progress.highlights import WeeklyHighlights
from bot.progress.leaderboard import Entry
from bot.progress.levels import progress
from bot.progress.profile import Profile
from bot.progress.streaks import Streak

WEIRD_NAMES = (
    "山田太郎",
    "👩‍👩‍👧‍👦🔥",
    "مرحبا بالعالم",
    "Zoë\u200b\u202eevil",
    "two\nlines\tand tabs",
    "x" * 1000,
    "",
)


def open_png(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG"
    image.load()
    return image


def colours(image: Image.Image) -> set[tuple[int, int, int]]:
    return {colour for _, colour in image.convert("RGB").getcolors(maxcolors=1 << 20)}


def profile(total: int, rank: int | None = 4) -> Profile:
    return Profile(1, total, progress(total), rank, 35, Streak(3, 5), ("q/t",), ("q",))


def bar_start(image: Image.Image) -> tuple[int, int, int]:
    """The colour just inside the left end of the progress bar."""
    return image.convert("RGB").getpixel((60, 114))


def test_profile_card_is_a_png_of_the_card_size() -> None:
    image = open_png(profile_card(profile(190), "Ada Lovelace"))
    assert image.size == CARD_SIZE
    assert bar_start(image) == ACCENT  # 40 of 150 XP into level 3


def test_profile_card_with_no_xp_shows_an_empty_bar() -> None:
    image = open_png(profile_card(profile(0, rank=None), "Newcomer"))
    assert image.size == CARD_SIZE
    assert bar_start(image) == TRACK


@pytest.mark.parametrize("name", WEIRD_NAMES)
def test_profile_card_draws_any_name(name: str) -> None:
    assert open_png(profile_card(profile(10**9, rank=10**6), name)).size == CARD_SIZE


def week(*names: str) -> WeeklyHighlights:
    top = tuple(
        Entry(rank, rank, rank, name, 1000 // rank) for rank, name in enumerate(names, start=1)
    )
    return WeeklyHighlights("2026-W48", top, (), ())


def test_weekly_chart_draws_the_top_ten_with_medal_colours() -> None:
    image = open_png(weekly_chart(week(*(f"member {n}" for n in range(10))), guild_name="GPU"))
    assert image.size == CHART_SIZE
    assert set(MEDAL_COLOURS.values()) | {ACCENT} <= colours(image)


def test_weekly_chart_without_entries_has_no_bars() -> None:
    image = open_png(weekly_chart(week(), guild_name="GPU"))
    assert image.size == CHART_SIZE
    assert not set(MEDAL_COLOURS.values()) & colours(image)


def test_weekly_chart_with_weird_names_and_guild_name() -> None:
    data = weekly_chart(week(*WEIRD_NAMES), guild_name="🚀 " + "g" * 500)
    assert open_png(data).size == CHART_SIZE


def test_fitting_size_shrinks_until_the_text_fits() -> None:
    assert fitting_size("12", 100, largest=28, smallest=16) == 28
    assert 16 < fitting_size("#1,234,567", 110, largest=28, smallest=16) < 28
    assert fitting_size("x" * 100, 10, largest=28, smallest=16) == 16
