"""Quiz grading: answer matching only, no sandbox (answers are data, not code).

A wrong answer is marked without revealing the accepted one, so a retry has
to be thought through; a right one shows the explanation, which is where the
teaching happens.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from bot.content.answer_matching import answer_matches
from bot.content.schema import QuizTask
from graders.base import Check, Verdict

MAX_ANSWER_CHARS = 200
#: a quiz passes with at least this fraction right; XP is scaled by the score,
#: so a later, better attempt earns the rest
PASS_MARK = 0.5


def grade_quiz(task_ref: str, task: QuizTask, answers: Mapping[str, str]) -> Verdict:
    """Mark each question; the score is the fraction answered correctly."""
    started = time.perf_counter()
    checks = []
    for number, question in enumerate(task.questions, start=1):
        given = answers.get(question.id, "").strip()[:MAX_ANSWER_CHARS]
        if not given:
            checks.append(Check(question.id, False, f"Q{number}: no answer given."))
        elif answer_matches(given, question):
            why = f" {question.explanation}" if question.explanation else ""
            checks.append(Check(question.id, True, f"Q{number}: correct.{why}"))
        else:
            checks.append(
                Check(question.id, False, f"Q{number}: {given!r} is not accepted; try again.")
            )
    right = sum(c.passed for c in checks)
    score = right / len(checks)
    status = "passed" if score >= PASS_MARK else "failed"
    if right == len(checks):
        feedback = f"All {right} correct."
    elif status == "passed":
        feedback = (
            f"{right} of {len(checks)} correct: passed. Answer the rest for the remaining XP."
        )
    else:
        feedback = f"{right} of {len(checks)} correct; {PASS_MARK:.0%} is needed to pass."
    return Verdict(
        task=task_ref,
        status=status,
        score=score,
        checks=tuple(checks),
        feedback=feedback,
        duration_s=time.perf_counter() - started,
        device="none",
    )
