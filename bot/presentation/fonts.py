"""The font the images use, and text made safe to draw with it.

The images draw with DejaVu Sans, shipped in the package (``bot/assets/fonts``, licence beside
it) rather than taken from the host: it covers Latin with diacritics, Greek and Cyrillic, so
names like ``Łukasz``, ``Αλέξης`` or ``Дмитрий`` are drawn as written.  What it lacks (most emoji,
CJK) would be drawn as its empty "missing glyph" box, so ``drawable`` replaces each such character
on its own and leaves the rest of the name alone.
"""

from __future__ import annotations

import unicodedata
from functools import cache, lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT_FILE = Path(__file__).resolve().parent.parent / "assets" / "fonts" / "DejaVuSans.ttf"

ELLIPSIS = "…"
REPLACEMENT = "?"  # stands in for a character the font cannot draw
MAX_CHARS = 200  # more than any name; keeps pixel fitting cheap for absurd input
MAX_MARKS = 2  # combining marks kept on one letter: "Zalgo" names stack dozens above the card
_INVISIBLE = frozenset({"Cc", "Cf"})  # controls; zero-width, joiner and bidi-override characters
_MARKS = frozenset({"Mn", "Me"})  # combining marks: drawn on the letter before them
_PROBE_SIZE = 16
_NO_GLYPH = "\uffff"  # a noncharacter, in no font: it draws as the font's "missing glyph" box


class MissingFontError(RuntimeError):
    """The bundled font file is not where the package keeps it: a broken install."""


def font_file(path: Path = FONT_FILE) -> Path:
    """``path`` when it exists; otherwise the error that says the install is broken, so that a
    package built without its font fails at start instead of drawing every name as boxes."""
    if not path.is_file():
        raise MissingFontError(
            f"the bundled font {path} is missing: this install of brrrbot is broken "
            "(the package must carry bot/assets/fonts/; reinstall it)"
        )
    return path


_FONT = font_file()


@cache
def font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(_FONT, size)


@cache
def _probe() -> tuple[ImageFont.FreeTypeFont, bytes]:
    """A font that maps each character straight to its glyph (raqm would shape a lone combining
    mark onto a dotted circle, and compose letters the font lacks), and its missing-glyph box."""
    face = ImageFont.truetype(_FONT, _PROBE_SIZE, layout_engine=ImageFont.Layout.BASIC)
    return face, _rendering(face, _NO_GLYPH)


def _rendering(face: ImageFont.FreeTypeFont, char: str) -> bytes:
    image = Image.new("L", (2 * _PROBE_SIZE, 2 * _PROBE_SIZE))
    ImageDraw.Draw(image).text((0, 0), char, font=face, fill=255)
    return image.tobytes()


@lru_cache(maxsize=8192)  # bounded: display names can bring any of Unicode's code points
def _has_glyph(char: str) -> bool:
    """Whether the font has a glyph for ``char``: it does unless ``char`` draws as the box.
    (Pillow has no character-map lookup; for DejaVu this agrees with the font's cmap.)"""
    face, missing = _probe()
    return _rendering(face, char) != missing


@lru_cache(maxsize=1024)
def _decomposed(char: str) -> str:
    """``char``'s compatibility decomposition (``Ｆ`` -> ``F``, ``㎏`` -> ``kg``) when the font
    draws every letter of it, less the marks it lacks; empty when it does not."""
    parts = unicodedata.normalize("NFKD", char)
    if parts == char or unicodedata.category(parts[0]) in _MARKS:
        return ""
    letters = [part for part in parts if unicodedata.category(part) not in _MARKS]
    if not all(_has_glyph(letter) for letter in letters):
        return ""
    return "".join(part for part in parts if part in letters or _has_glyph(part))


def drawable(text: str) -> str:
    """``text`` on one line using only characters the font draws, never folded to ASCII.

    NFC-normalised, whitespace collapsed; controls and invisible format characters dropped, and
    combining marks kept only on a letter drawn as written (at most ``MAX_MARKS`` each).  A
    character the font lacks becomes the letters of its compatibility decomposition when the font
    has them, else one ``REPLACEMENT`` (``?``): ``Łukasz 🚀 漢`` -> ``Łukasz ? ?``.
    """
    chars: list[str] = []
    marks: int | None = None  # marks on the last letter; None when it cannot carry one
    for char in unicodedata.normalize("NFC", " ".join(text[:MAX_CHARS].split())):
        category = unicodedata.category(char)
        if category in _INVISIBLE:
            continue
        if category in _MARKS:
            if marks is not None and marks < MAX_MARKS and _has_glyph(char):
                chars.append(char)
                marks += 1
        elif _has_glyph(char):
            chars.append(char)
            marks = 0
        elif parts := _decomposed(char):
            chars.append(parts)
            marks = sum(unicodedata.category(part) in _MARKS for part in parts)
        else:
            chars.append(REPLACEMENT)
            marks = None
    return " ".join("".join(chars).split())[:MAX_CHARS]


def fit(text: str, size: int, width: float) -> str:
    """``text`` cut (with an ellipsis) to at most ``width`` pixels at ``size``."""
    face = font(size)
    if face.getlength(text) <= width:
        return text
    while text and face.getlength(text + ELLIPSIS) > width:
        text = text[:-1]
    return text.rstrip() + ELLIPSIS


def fitting_size(text: str, width: float, largest: int, smallest: int) -> int:
    """The largest font size from ``largest`` down to ``smallest`` at which ``text`` fits in
    ``width`` pixels (``smallest`` when none does): numbers shrink rather than lose digits."""
    for size in range(largest, smallest, -1):
        if font(size).getlength(text) <= width:
            return size
    return smallest
