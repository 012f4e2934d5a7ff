"""Our catalogue of submissions per build grader: a reference, other correct styles a
learner might choose, and the common mistakes each grader must fail, whatever the seed,
naming the likely cause.  Written from the task prompts, not from the graders.

Each module here is named after its grader and defines ``CATALOGUE``.  A style's or a
mistake's ``code`` is appended to the reference, so its top-level defs replace the
reference's and everything else stays correct: each entry differs in one thing only.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


@dataclass(frozen=True)
class CorrectStyle:
    """A correct formulation: it must pass on every seed."""

    name: str
    code: str


@dataclass(frozen=True)
class CommonMistake:
    """A realistic slip: ``function``'s correct-results check must fail on every seed and
    its likely cause must contain ``cause``."""

    name: str
    function: str
    cause: str
    code: str


@dataclass(frozen=True)
class Catalogue:
    grader: str
    task: str  # QUEST/TASK
    reference: Path  # a complete correct solution
    styles: tuple[CorrectStyle, ...]
    mistakes: tuple[CommonMistake, ...]

    def source(self, code: str = "") -> str:
        return self.reference.read_text() + ("\n\n" + code if code else "")


def catalogue_for(grader: str) -> Catalogue:
    module = importlib.import_module(f"tests.graders.catalogue.{grader}")
    found: Catalogue = module.CATALOGUE
    assert found.grader == grader, f"{module.__name__} catalogues {found.grader}"
    return found
