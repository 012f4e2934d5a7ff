"""Quiz answer matching that forgives notation, not substance.

Learners type shapes as ``(4, 128, 128)``, ``4x128x128`` or paste
``torch.Size([4, 128, 128])``; all are the same answer.  Rather than listing
every spelling in the quest file, both sides are reduced to one canonical form.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Protocol


class Question(Protocol):
    """What matching reads of a quiz question (``bot.content.schema.Question`` has it)."""

    @property
    def tolerance(self) -> float | None: ...
    @property
    def answers(self) -> Sequence[str]: ...
    def numeric_answers(self) -> tuple[float, ...]: ...


_WRAPPERS = "\"'`“”‘’"
_TRAILING = ".!?;:,"
_TIMES = re.compile(r"(?<=\d)\s*[x×*]\s*(?=\d)")
_JOINERS = re.compile(r"(?<=\w)[-_](?=\w)")
_BRACKETS = re.compile(r"[()\[\]{}]")
_SEPARATORS = re.compile(r"[\s,;]+")
_NUMBER = re.compile(
    r"""(?P<sign>[+-]?)
        (?P<mantissa>\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)
        (?P<exponent>e[+-]?\d+)?
        (?P<rest>.*)""",
    re.VERBOSE | re.DOTALL,
)
_APPROX = "~≈"


def _strip_wrappers(text: str) -> str:
    """Drop surrounding quotes/backticks and trailing punctuation, repeatedly,
    so ``"memory bandwidth".`` and ``memory bandwidth`` compare equal."""
    while True:
        stripped = text.strip().strip(_WRAPPERS).rstrip(_TRAILING)
        if stripped == text:
            return text
        text = stripped


def normalize_answer(text: str) -> str:
    """Canonical form for comparing free-text answers.

    Case, width, quotes, trailing punctuation, brackets and the separator in a
    shape (comma, ``x``, ``×``, ``*``) are ignored; hyphens and underscores
    inside words count as spaces.  Minus signs before numbers are kept.
    """
    text = _strip_wrappers(unicodedata.normalize("NFKC", text).casefold())
    text = text.replace("torch.size", " ")
    text = _TIMES.sub(",", text)
    text = _JOINERS.sub(" ", text)
    text = _BRACKETS.sub(" ", text)
    return " ".join(part for part in _SEPARATORS.split(text) if part)


def parse_number(text: str) -> float | None:
    """Read a number such as ``1e12``, ``1,000,000`` or ``2.5 TB/s`` (unit ignored).

    Returns None for anything else, including ambiguous forms like ``1,5``:
    guessing a decimal comma would mark a wrong answer right.
    """
    text = _strip_wrappers(unicodedata.normalize("NFKC", text).casefold()).lstrip(_APPROX)
    match = _NUMBER.fullmatch(text.strip())
    if match is None:
        return None
    rest = match["rest"].strip()
    if rest and not (rest[0].isalpha() or rest[0] in "%/°µ"):
        return None
    mantissa = match["mantissa"].replace(",", "")
    value = float(f"{match['sign']}{mantissa}{match['exponent'] or ''}")
    return value if math.isfinite(value) else None


def answer_matches(given: str, question: Question) -> bool:
    """True when ``given`` matches any accepted answer of ``question``.

    With ``tolerance`` set the question is numeric: the answer must parse as a
    number within that relative tolerance of an accepted value.
    """
    if question.tolerance is not None:
        value = parse_number(given)
        if value is None:
            return False
        return any(
            math.isclose(value, expected, rel_tol=question.tolerance, abs_tol=0.0)
            for expected in question.numeric_answers()
        )
    wanted = normalize_answer(given)
    return bool(wanted) and any(wanted == normalize_answer(a) for a in question.answers)
