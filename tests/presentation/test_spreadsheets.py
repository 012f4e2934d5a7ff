"""CSV files: a text cell that a spreadsheet would run as a formula is written inert."""

from __future__ import annotations

import csv
import io
import re

import pytest

from bot.presentation.spreadsheets import csv_bytes
from tests.support import REPO

#: what an attacker can choose as a display name or a reason, each a formula once opened
FORMULAS = [
    '=HYPERLINK("http://evil","x")',
    "+1+1",
    "-2+3",
    "@SUM(1,1)",
    "\t=1+1",
    "\r=1+1",
]
PLAIN = ["Ada", "ada@example.com", "1-2", "'quoted", " =spaced", ""]


def _parsed(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


@pytest.mark.parametrize("text", FORMULAS)
def test_a_text_cell_that_starts_a_formula_gets_a_quote(text: str) -> None:
    print(f"ATTACK: a cell {text!r}")
    header, row = _parsed(csv_bytes(["name", "amount"], [[text, -5]]))
    assert header == ["name", "amount"]
    assert row == ["'" + text, "-5"]  # the number is written as it is


@pytest.mark.parametrize("text", PLAIN)
def test_other_text_and_numbers_are_written_as_they_are(text: str) -> None:
    _, row = _parsed(csv_bytes(["name", "xp", "ratio", "none"], [[text, -5, -1.5, None]]))
    assert row == [text, "-5", "-1.5", ""]


def test_a_header_cell_is_made_inert_too() -> None:
    (header,) = _parsed(csv_bytes(["=cmd", "xp"], []))
    assert header == ["'=cmd", "xp"]


def test_every_csv_the_project_writes_goes_through_the_helper() -> None:
    """No other module opens a CSV writer of its own (which would skip the rule)."""
    writer = re.compile(r"\bcsv\.(writer|DictWriter)\b|^\s*from csv import", re.MULTILINE)
    sources = [path for top in ("bot", "bench", "graders") for path in (REPO / top).rglob("*.py")]
    writers = sorted(
        str(path.relative_to(REPO)) for path in sources if writer.search(path.read_text())
    )
    assert writers == ["bot/presentation/spreadsheets.py"]
