"""What /solutions says: a full page of the longest lines still fits one Discord message,
attachment names are safe whatever was uploaded, and the "after reading" mark shows wherever a
run is named."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from bot.presentation.solution_pages import SHORT_HINT, attachment_name, attachments, page_text
from bot.presentation.speed_board_embeds import entry_line, fastest_line
from bot.progress.solutions import PAGE, SharedSolution, SharedSpeed, SolutionsPage
from bot.progress.speed_results import FastestOfWeek, SpeedEntry
from tests.presentation.discord_check import assert_sendable

WHEN = datetime(2026, 12, 7, 9, 30, tzinfo=UTC)
LONG_REF = "q" * 64 + "/" + "t" * 64  # the longest ref a map allows


def _solution(
    position: int, *, speed: SharedSpeed | None, filename: str = "x.py"
) -> SharedSolution:
    return SharedSolution(
        position, 10**19 + position, "n" * 100, position, WHEN, filename, "py", b"print(1)\n", speed
    )


def test_a_page_of_the_longest_lines_fits_one_message() -> None:
    speed = SharedSpeed(123.456, 130.0, "G" * 128, True, "S" * 2000)
    page = SolutionsPage(
        LONG_REF, 199, 1000, tuple(_solution(n, speed=speed) for n in range(996, 996 + PAGE)), WHEN
    )
    text = page_text(page, title="T" * 300, speed_ranked=True)
    assert_sendable(content=text)
    assert text.count("📖") >= PAGE  # every line carries the mark
    assert all(f"\n{n}. <@{10**19 + n}>" in text for n in range(996, 996 + PAGE))
    assert text.endswith(f"XP is not affected.\n{SHORT_HINT}")  # the footer is whole
    assert "page 200 of 200" in text and "<t:" in text


def test_attachment_names_are_safe_and_unique_whatever_was_uploaded() -> None:
    uploaded = ("../../etc/passwd", "solution.py\u202egnp.exe", "", "notebook.ipynb")
    page = SolutionsPage(
        "quest/task.with..dots",
        0,
        4,
        tuple(_solution(n + 1, speed=None, filename=name) for n, name in enumerate(uploaded)),
        None,
    )
    names = [a.filename for a in attachments(page)]
    assert names == [f"{n}-quest-task.with..dots.py" for n in range(1, 5)]
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", name) for name in names)
    notebook = _solution(1, speed=None)
    notebook = SharedSolution(*[*notebook.__dict__.values()][:6], "ipynb", b"{}", None)
    assert attachment_name(notebook, "a/b") == "1-a-b.ipynb"
    assert attachment_name(notebook, "../..") == "1-solution.ipynb"


def test_the_mark_shows_on_a_board_line_and_the_weeks_fastest() -> None:
    entry = SpeedEntry(4, 1, 42, "ada", 1.7, 2.6, 0.01, 0.026, WHEN, after_reading=True)
    assert entry_line(entry).endswith(" · 📖")
    plain = SpeedEntry(4, 1, 42, "ada", 1.7, 2.6, 0.01, 0.026, WHEN)
    assert "📖" not in entry_line(plain)
    fastest = FastestOfWeek("2026-W50", "a/b", 3, 1, 42, "ada", 1.7, 2.6, "GPU", WHEN)
    assert "📖" not in fastest_line(fastest, title="B")
    marked = FastestOfWeek(
        "2026-W50", "a/b", 3, 1, 42, "ada", 1.7, 2.6, "GPU", WHEN, after_reading=True
    )
    assert fastest_line(marked, title="B").endswith("(📖 after reading the shared solutions)")
