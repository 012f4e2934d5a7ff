"""Helpers the grader tests share: grading an example file for real, reading a verdict,
and loading quests and quizzes."""

from __future__ import annotations

import importlib.util
import math
import secrets
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from bot.content import Content, QuizTask
from bot.content.documents import load_file
from bot.content.quiz_grading import grade_quiz
from bot.content.schema import Quest
from bot.intake.submission_input import UploadLimits, validate_submission
from bot.worker.grade_job import SandboxRunner
from graders.base import Check, Grader, Verdict
from sandbox.api import SandboxRequest, SandboxResult
from tests.support import SEED_QUESTS


def grade_in_sandbox(
    zygote: SandboxRunner, grader: Grader, task: str, path: Path, device: str = "cpu"
) -> tuple[Verdict, SandboxResult]:
    """Grade an example file as the bot does: validate it, run a fresh plan in the
    sandbox, judge.  The raw result comes back too, for tests that look at the job."""
    prepared = validate_submission(path.name, path.read_bytes(), UploadLimits.defaults())
    plan = grader.plan(secrets.randbits(62), device)
    request = SandboxRequest(prepared.source, path.name, plan.calls, grader.limits, device=device)
    result = zygote.run(request)
    return grader.judge(task, plan, result, prepared.source), result


def passed(verdict: Verdict) -> dict[str, bool]:
    return {c.name: c.passed for c in verdict.checks}


def message(verdict: Verdict, name: str) -> str:
    return _named(verdict, name).message


def failing(verdict: Verdict, name: str) -> str:
    """The message of the check called ``name``, which must have failed."""
    found = _named(verdict, name)
    assert not found.passed, found.message
    return found.message


def _named(verdict: Verdict, name: str) -> Check:
    (found,) = [c for c in verdict.checks if c.name == name]
    return found


def load_solution(path: Path) -> ModuleType:
    """Our own example file, imported here only to sweep seeds without the sandbox."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_quest(quest_id: str) -> Quest:
    """One quest's file alone, so other quests being edited cannot break these tests
    (``test_seed_content`` checks the whole directory, cross-references included)."""
    name = f"{quest_id}.yaml"
    loaded = load_file(SEED_QUESTS / name, name, Quest)
    assert loaded.model is not None, loaded.problems
    return loaded.model


def quiz_task(content: Content, ref: str) -> QuizTask:
    task = content.find_task(ref)[1]
    assert isinstance(task, QuizTask)
    return task


def assert_stated_answers(task: QuizTask, values: Mapping[str, float]) -> None:
    """Every question of ``task`` is numeric and its answer is ``values[id]``, to 0.1%."""
    assert {q.id for q in task.questions} == set(values)
    for question in task.questions:
        value = values[question.id]
        assert question.tolerance is not None
        assert math.isclose(question.numeric_answers()[0], value, rel_tol=1e-3), question.id


def assert_quiz_passes(ref: str, task: QuizTask, answers: Mapping[str, str]) -> None:
    verdict = grade_quiz(ref, task, answers)
    assert verdict.status == "passed" and verdict.score == 1.0, verdict.checks
