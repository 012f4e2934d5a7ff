"""A small valid content directory that each test breaks in one place.

Line numbers in the expected messages refer to the texts below, so they are
kept short and stable: FIRST_QUEST's ``xp: 10`` is line 12, for example.
"""

from __future__ import annotations

from pathlib import Path

from bot.content import Problem, check_content

LIBRARY = """\
entries:
  - id: intro
    title: Intro
    authors: [Ann]
    kind: post
    url: https://example.com/intro
    cost: free
    why: Start here.
    tags: [basics]
"""

MAP = """\
phases:
  - id: basics
    title: Basics
    quests:
      - first
"""

FIRST_QUEST = """\
id: first
title: First
phase: basics
summary: Hello.
readings:
  - ref: intro
    note: read it
tasks:
  - id: build-it
    title: Build it
    kind: build
    xp: 10
    prompt: Do it.
    grader: stable_softmax
    interface:
      - softmax(x)
  - id: quiz-it
    title: Quiz it
    kind: quiz
    xp: 5
    prompt: Answer.
    questions:
      - id: one
        prompt: One?
        answers: ["1"]
"""

SECOND_QUEST = """\
id: second
title: Second
phase: basics
summary: Again.
readings: []
tasks:
  - id: read
    title: Read
    kind: reading
    xp: 1
    prompt: Read.
"""


class ContentDir:
    """A content directory named ``quests`` under a temporary folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / "quests"
        self.path.mkdir()
        self.write("library.yaml", LIBRARY)
        self.write("map.yaml", MAP)
        self.write("first.yaml", FIRST_QUEST)

    def write(self, name: str, text: str) -> None:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def edit(self, name: str, old: str, new: str) -> None:
        """Replace ``old`` exactly once, so a test cannot silently edit nothing."""
        text = (self.path / name).read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {name}"
        self.write(name, text.replace(old, new))

    def add_second_quest(self, text: str = SECOND_QUEST) -> None:
        self.write("second.yaml", text)
        self.edit("map.yaml", "      - first\n", "      - first\n      - second\n")

    def problems(self) -> list[Problem]:
        return check_content(self.path)

    def relative(self, file: str) -> str:
        """A problem's file less the temporary folder, e.g. ``quests/first.yaml``."""
        assert file.startswith(f"{self.root}/"), file
        return file.removeprefix(f"{self.root}/")

    def report(self) -> list[str]:
        """Each problem as printed, less the temporary folder: ``quests/first.yaml:12: ...``
        (the full path is printed, leading / included)."""
        shown = [str(p) for p in self.problems()]
        assert all(line.startswith(f"{self.root}/quests") for line in shown), shown
        return [line.replace(f"{self.root}/", "") for line in shown]
