"""CSV files that people open in a spreadsheet, with every text cell made inert.

A spreadsheet treats a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula (a tab
or carriage return can hide such a start), so a member named ``=HYPERLINK(...)`` would put a
live link, or worse, in a moderator's export.  Such a text cell gets a leading ``'`` (OWASP's
rule for CSV injection), which spreadsheets show as text.  Only ``str`` cells are touched:
numbers stay numbers, negative ones included.  Every CSV the bot writes goes through
``csv_bytes``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert(cell: object) -> object:
    """The cell as written: a text cell that could start a formula, prefixed with ``'``."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


def csv_bytes(header: Sequence[str], rows: Iterable[Sequence[object]]) -> bytes:
    """A UTF-8 CSV file of ``header`` and ``rows``, every cell through ``inert``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([inert(cell) for cell in header])
    writer.writerows([inert(cell) for cell in row] for row in rows)
    return buffer.getvalue().encode("utf-8")
