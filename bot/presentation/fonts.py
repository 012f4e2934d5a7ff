"""The font the images use, and text made safe to draw with it.

Pillow's scalable default font (``load_default(size=...)``) needs no font file, but it covers
little beyond ASCII: any other character would be drawn as an empty box.  So names are folded to
characters the font has (``Lövelace`` -> ``Lovelace``) and what cannot be folded becomes ``?``.
The glyph check asks the font itself, so a fuller font would need no change here.
"""

from __future__ import annotations

import unicodedata
from functools import cache

from PIL import Image, ImageDraw, ImageFont

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont

ELLIPSIS = "…"
MAX_CHARS = 200  # more than any name; keeps pixel fitting cheap for absurd input
_PROBE_SIZE = 16
_NO_GLYPH = "\U0010fffd"  # a private-use code point: fonts draw their "missing glyph" box for it


@cache
def font(size: int) -> Font:
    return ImageFont.load_default(size=size)


@cache
def _rendering(char: str) -> bytes:
    image = Image.new("L", (2 * _PROBE_SIZE, 2 * _PROBE_SIZE))
    ImageDraw.Draw(image).text((0, 0), char, font=font(_PROBE_SIZE), fill=255)
    return image.tobytes()


@cache
def _has_glyph(char: str) -> bool:
    return _rendering(char) != _rendering(_NO_GLYPH)


def drawable(text: str) -> str:
    """``text`` on one line using only characters the font draws: whitespace collapsed, invisible
    and control characters dropped, accents dropped when the bare letter exists, others ``?``."""
    chars: list[str] = []
    for char in unicodedata.normalize("NFC", " ".join(text[:MAX_CHARS].split())):
        if _has_glyph(char):
            chars.append(char)
        elif unicodedata.category(char) in ("Cc", "Cf", "Mn", "Me"):
            continue  # controls, zero-width joiners, variation selectors, stray combining marks
        else:
            folded = "".join(c for c in unicodedata.normalize("NFKD", char) if _has_glyph(c))
            chars.append(folded if folded.strip() else "?")
    return "".join(chars)


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
