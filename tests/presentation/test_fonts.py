"""Names keep their letters: Latin with diacritics, Greek and Cyrillic are drawn as written on the
profile card and the weekly chart, and only what the bundled font lacks is replaced, one
character at a time."""

from __future__ import annotations

import io
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageDraw, ImageFont

from bot.presentation.fonts import (
    FONT_FILE,
    MAX_MARKS,
    REPLACEMENT,
    MissingFontError,
    drawable,
    font_file,
)
from bot.presentation.images import BACKGROUND, profile_card, weekly_chart
from bot.progress.highlights import WeeklyHighlights
from bot.progress.leaderboard import Entry
from bot.progress.levels import progress
from bot.progress.profile import Profile
from bot.progress.streaks import Streak

NAMES = ("Łukasz", "Αλέξης", "Дмитрий")
MIXED = "Łukasz 🚀 Дмитрий 漢"
MIXED_DRAWN = f"Łukasz {REPLACEMENT} Дмитрий {REPLACEMENT}"
NO_GLYPH = "\uffff"  # a noncharacter: every font draws its missing-glyph box for it


@pytest.mark.parametrize("name", [*NAMES, "Ada Lövelace", "Zoë Ørsted-Šimić", "Ωμέγα Ёлка"])
def test_latin_greek_and_cyrillic_names_are_kept_as_written(name: str) -> None:
    assert drawable(name) == name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MIXED, MIXED_DRAWN),
        ("山田", REPLACEMENT * 2),
        ("Ana 👩\u200d👩\u200d👧", f"Ana {REPLACEMENT * 3}"),  # the joiners go, each emoji counts
        ("ok 🔥\ufe0f", f"ok {REPLACEMENT}"),  # no variation selector on a replacement
        ("Ｆｕｌｌ width ㎏", "Full width kg"),  # letters the font lacks, decomposed
    ],
)
def test_each_character_the_font_lacks_is_replaced_on_its_own(text: str, expected: str) -> None:
    assert drawable(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("two\nlines\tand  tabs ", "two lines and tabs"),
        ("zero\u200bwidth", "zerowidth"),
        ("Zoë\u202eevil\u200e", "Zoëevil"),  # a bidi override would reverse what follows
        ("e\u0301\u0301", "é\u0301"),  # NFC: one accent composes, the other stays on it
        ("\u0301stray", "stray"),  # a mark with no letter to sit on
        ("Z" + "\u0336" * 40, "Z" + "\u0336" * MAX_MARKS),  # "Zalgo": the marks stop
    ],
)
def test_invisible_and_stray_characters_go(text: str, expected: str) -> None:
    assert drawable(text) == expected


def test_a_missing_font_file_says_the_install_is_broken(tmp_path: Path) -> None:
    missing = tmp_path / "DejaVuSans.ttf"
    with pytest.raises(MissingFontError, match=rf"{re.escape(str(missing))} is missing: .* broken"):
        font_file(missing)


def test_the_font_ships_with_its_licence() -> None:
    assert font_file() == FONT_FILE
    licence = (FONT_FILE.parent / "LICENSE-DejaVu.txt").read_text()
    assert "Bitstream Vera Fonts Copyright" in licence
    assert "Arev Fonts Copyright" in licence


@dataclass(frozen=True)
class Drawn:
    """One ``ImageDraw.text`` call, as the images module made it."""

    xy: tuple[float, float]
    text: str
    font: ImageFont.FreeTypeFont
    anchor: str | None


def drawn_texts(monkeypatch: pytest.MonkeyPatch) -> list[Drawn]:
    """Records every text the images draw (and still draws it)."""
    calls: list[Drawn] = []
    real: Callable[..., None] = ImageDraw.ImageDraw.text

    def text(
        draw: ImageDraw.ImageDraw,
        xy: tuple[float, float],
        text: str,
        fill: object = None,
        font: ImageFont.FreeTypeFont | None = None,
        anchor: str | None = None,
        **options: object,
    ) -> None:
        assert font is not None  # the images always say which font
        calls.append(Drawn(xy, text, font, anchor))
        real(draw, xy, text, fill, font, anchor, **options)

    monkeypatch.setattr(ImageDraw.ImageDraw, "text", text)
    return calls


def ink_box(image: Image.Image, background: float | tuple[int, ...]) -> tuple[int, int, int, int]:
    """Where anything but the background is drawn."""
    box = ImageChops.difference(image, Image.new(image.mode, image.size, background)).getbbox()
    assert box is not None
    return box


def assert_drawn_as_written(png: bytes, drawn: Drawn, name: str) -> None:
    """The name is drawn unfolded, no character of it as the missing-glyph box, and the ink on
    the image is the ink of that name in the bundled font, no more and no less."""
    assert drawn.text == name
    face = drawn.font
    missing = (face.getbbox(NO_GLYPH), face.getlength(NO_GLYPH))
    for char in name.replace(" ", ""):
        assert (face.getbbox(char), face.getlength(char)) != missing, unicodedata.name(char)
    bundled = ImageFont.truetype(FONT_FILE, face.size)
    assert face.getlength(name) == bundled.getlength(name)
    image = Image.open(io.BytesIO(png)).convert("RGB")
    alone = Image.new("L", image.size)
    ImageDraw.Draw(alone).text(drawn.xy, name, fill=255, font=bundled, anchor=drawn.anchor)
    left, top, right, bottom = ink_box(alone, 0)
    around = (left - 3, top - 3, right + 3, bottom + 3)  # the name's row, and nothing else
    assert ink_box(image.crop(around), BACKGROUND) == ink_box(alone.crop(around), 0)
    assert abs((right - left) - bundled.getlength(name)) < face.size / 4  # the bearings only


def profile() -> Profile:
    return Profile(1, 190, progress(190), 4, 35, Streak(3, 5), ("q/t",), ("q",))


@pytest.mark.parametrize(("name", "shown"), [*((n, n) for n in NAMES), (MIXED, MIXED_DRAWN)])
def test_the_profile_card_draws_the_name_as_written(
    name: str, shown: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = drawn_texts(monkeypatch)
    png = profile_card(profile(), name)
    (drawn,) = [call for call in calls if call.text == drawable(name)]
    assert_drawn_as_written(png, drawn, shown)


def test_the_weekly_chart_draws_the_names_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    names = (*NAMES, MIXED)
    top = tuple(Entry(rank, rank, rank, name, 900 // rank) for rank, name in enumerate(names, 1))
    calls = drawn_texts(monkeypatch)
    png = weekly_chart(WeeklyHighlights("2026-W48", top, (), ()), guild_name="Łódź")
    on_chart = [*calls]  # before the checks draw their own
    shown_as = [*zip(names, (*NAMES, MIXED_DRAWN), strict=True), ("Łódź", "Łódź")]
    for name, shown in shown_as:
        (drawn,) = [call for call in on_chart if call.text == drawable(name)]
        assert_drawn_as_written(png, drawn, shown)
