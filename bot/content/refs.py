"""``QUEST/TASK`` references: the one way tasks are named in commands, the
database and grader verdicts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.content.schema import SLUG_PATTERN

_REF = re.compile(rf"(?P<quest>{SLUG_PATTERN})/(?P<task>{SLUG_PATTERN})")


@dataclass(frozen=True)
class TaskRef:
    quest: str
    task: str

    @classmethod
    def parse(cls, text: str) -> TaskRef:
        """Parse ``go-brrrr/matmul-three-ways``; surrounding whitespace is ignored."""
        match = _REF.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"{text!r} is not a task reference; expected QUEST/TASK")
        return cls(match["quest"], match["task"])

    def __str__(self) -> str:
        return f"{self.quest}/{self.task}"
