"""Quiz grading against the seed quest: matching, scoring, and no answer leaks."""

from __future__ import annotations

from bot.content import load_content
from bot.content.quiz_grading import grade_quiz
from bot.content.schema import QuizTask
from tests.support import SEED_QUESTS


def _quiz(ref: str) -> QuizTask:
    _, task = load_content(SEED_QUESTS).find_task(ref)
    assert isinstance(task, QuizTask)
    return task


def test_shape_notations_all_pass() -> None:
    task = _quiz("go-brrrr/shape-predictions")
    answers = {"scores": "4x128x128", "scaled-scores": "[4,128,128]"}
    answers["softmax"] = "torch.Size([4, 128, 128])"
    verdict = grade_quiz("go-brrrr/shape-predictions", task, answers)
    assert verdict.status == "passed" and verdict.score == 1.0
    assert all(check.passed for check in verdict.checks)
    assert "elementwise" in verdict.checks[1].message  # the explanation teaches


def test_partial_answers_score_and_do_not_reveal() -> None:
    task = _quiz("go-brrrr/shape-predictions")
    verdict = grade_quiz(
        "go-brrrr/shape-predictions",
        task,
        {"scores": "(4, 128, 128)", "scaled-scores": "(4, 64, 64)"},
    )
    assert verdict.status == "failed"
    assert verdict.score == 1 / 3
    wrong, missing = verdict.checks[1], verdict.checks[2]
    assert not wrong.passed and "(4, 64, 64)" in wrong.message
    assert "128" not in wrong.message  # the accepted answer is not given away
    assert not missing.passed and "no answer" in missing.message
    assert verdict.feedback == "1 of 3 correct; 50% is needed to pass."


def test_pass_mark_allows_partial_credit() -> None:
    task = _quiz("go-brrrr/shape-predictions")
    answers = {"scores": "(4, 128, 128)", "scaled-scores": "(4, 128, 128)", "softmax": "4"}
    verdict = grade_quiz("go-brrrr/shape-predictions", task, answers)
    assert verdict.status == "passed" and verdict.score == 2 / 3
    assert "remaining XP" in verdict.feedback


def test_bottleneck_synonyms() -> None:
    task = _quiz("go-brrrr/name-the-bottleneck")
    answers = {q.id: q.answers[-1] for q in task.questions}
    answers["batching"] = "Memory-Bandwidth."
    verdict = grade_quiz("go-brrrr/name-the-bottleneck", task, answers)
    assert verdict.status == "passed", [c.message for c in verdict.checks if not c.passed]
    answers["batching"] = "compute"
    one_wrong = grade_quiz("go-brrrr/name-the-bottleneck", task, answers)
    assert one_wrong.score == (len(task.questions) - 1) / len(task.questions)
    assert not one_wrong.checks[0].passed
