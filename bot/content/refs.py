"""``QUEST/TASK`` references: the one way tasks are named in commands, the
database and grader verdicts.

``TaskRef`` is the one place a ref is built (``str(TaskRef(quest_id, task_id))``) and read
(``TaskRef.parse``); everywhere else a ref is its text, as stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.content.schema import SLUG_PATTERN

_REF = re.compile(rf"(?P<quest>{SLUG_PATTERN})/(?P<task>{SLUG_PATTERN})")


class BadTaskRef(ValueError):
    """Text that is not a ``QUEST/TASK`` reference; the message quotes it."""


@dataclass(frozen=True)
class TaskRef:
    quest: str
    task: str

    @classmethod
    def parse(cls, text: str) -> TaskRef:
        """Parse ``go-brrrr/matmul-three-ways``; surrounding whitespace is ignored.
        BadTaskRef when ``text`` is not two slugs joined by one ``/``."""
        match = _REF.fullmatch(text.strip())
        if match is None:
            raise BadTaskRef(f"{text!r} is not a task reference; expected QUEST/TASK")
        return cls(match["quest"], match["task"])

    def __str__(self) -> str:
        return f"{self.quest}/{self.task}"
