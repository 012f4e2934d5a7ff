"""What the content checker reports, shaped so every complaint points at a line to edit."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the content, with the place to fix it and how.

    ``line`` is None only when there is no line to point at (a missing file or
    directory); ``column`` is set for YAML syntax errors, where it matters.
    """

    file: str
    line: int | None
    message: str
    hint: str
    column: int | None = None

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message} (fix: {self.hint})"


class ContentError(Exception):
    """Raised by ``load_content`` so callers get every problem at once, not the first."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        count = len(self.problems)
        lines = "\n".join(str(p) for p in self.problems)
        super().__init__(f"{count} content problem{'s' if count != 1 else ''}:\n{lines}")


def sort_problems(problems: Iterable[Problem]) -> list[Problem]:
    """Order by file, then line, so a report reads top to bottom like the files do."""
    return sorted(problems, key=lambda p: (p.file, p.line or 0, p.column or 0, p.message))
