"""tensor-puzzles: the broadcasting drills graded for real in the sandbox, and the shape quiz.

Learner code runs only inside ``sandbox``'s jobs, never in this process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bot.content.quiz_grading import grade_quiz
from bot.content.schema import BuildTask, QuizTask
from bot.worker.grade_job import SandboxRunner
from graders.base import Verdict
from graders.comparison import compare_tensor
from graders.registry import load_grader
from graders.tasks.tensor_puzzles import TensorPuzzles
from tests.graders.support import assert_quiz_passes, failing, grade_in_sandbox, load_quest

QUEST = "tensor-puzzles"
TASK = f"{QUEST}/broadcasting-drills"
SOLUTIONS = Path(__file__).parent / "solutions" / QUEST


def grade(zygote: SandboxRunner, name: str) -> Verdict:
    verdict, _ = grade_in_sandbox(zygote, TensorPuzzles(), TASK, SOLUTIONS / name)
    return verdict


def test_the_quest_names_the_grader_and_its_interface() -> None:
    task = load_quest(QUEST).task("broadcasting-drills")
    assert isinstance(task, BuildTask)
    assert load_grader(task.grader).interface == task.function_names()
    for name in ("outer", "diagonal", "triu", "tril", "cumsum", "flip", "clamp", "einsum"):
        assert f"`{name}`" in task.prompt, name  # named as code: `cumsum`, or /`cumsum`


def test_the_reference_solution_passes(zygote: SandboxRunner) -> None:
    verdict = grade(zygote, "correct.py")
    assert verdict.status == "passed", [c.message for c in verdict.checks if not c.passed]
    assert verdict.score == 1.0 and len(verdict.checks) == 12


#: each wrong solution -> the functions it gets wrong -> what their failing check must say
WRONG: dict[str, dict[str, tuple[str, ...]]] = {
    "wrong_triangles.py": {
        "triu": ("Likely cause: you zeroed the diagonal too",),
        "cumsum": ("Likely cause: that is the exclusive running sum",),
    },
    "wrong_dtypes.py": {
        "cumsum": ("expected dtype int64, got float32", "Likely cause: the values are right"),
        "relu": ("expected dtype int64, got float32", "a float zero (0.0) in torch.where"),
    },
    "wrong_outer_flip.py": {
        "outer": ("expected shape", "Likely cause: that is outer(b, a)"),
        "flip": ("raised IndexError",),  # the error says it: n - i is one past the end
    },
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_solutions_fail_on_their_mistakes_only(zygote: SandboxRunner, name: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "failed" and verdict.score < 1.0
    for function, expected in WRONG[name].items():
        message = failing(verdict, f"{function}: correct results")
        assert all(e in message for e in expected), message
    right = [c for c in verdict.checks if c.name.split(":")[0] not in WRONG[name]]
    assert all(c.passed for c in right), [c.message for c in right if not c.passed]


def test_library_calls_fail_the_allowed_operations_checks(zygote: SandboxRunner) -> None:
    verdict = grade(zygote, "cheat_library.py")
    assert verdict.status == "failed" and verdict.score == 0.5  # right answers, wrong means
    what = "a library call that solves this puzzle for you"
    for function, call in [
        ("outer", "outer"),
        ("diag", "diagonal"),
        ("triu", "triu"),
        ("cumsum", "cumsum"),
        ("flip", "flip"),
        ("relu", "clamp"),
    ]:
        message = failing(verdict, f"{function}: allowed operations only")
        assert f"{call} is {what}" in message
        assert "torch recorded" in message


def test_float32_cumsum_tolerance_admits_any_summation_order() -> None:
    """The broadcast-mask sum and a left-to-right float32 loop both pass, on many seeds."""
    for seed in range(40):
        for case in TensorPuzzles().plan(seed, "cpu").expected["cases"]:
            if case.function != "cumsum" or case.expected.dtype != torch.float32:
                continue
            (a,) = case.args
            n = a.shape[0]
            i = torch.arange(n)
            masked = ((i[None, :] <= i[:, None]) * a[None, :]).sum(1)
            running, total = [], torch.zeros((), dtype=torch.float32)
            for value in a:
                total = total + value
                running.append(total)
            for got in (masked, torch.stack(running)):
                assert compare_tensor(case, got).ok, (seed, case.label)


def test_the_prompt_states_the_accuracy_the_grader_checks() -> None:
    task = load_quest(QUEST).task("broadcasting-drills")
    assert isinstance(task, BuildTask)
    assert "`1e-5 × |ref| + 1e-6`" in task.prompt and "int64 results must be exact" in task.prompt
    assert "`4 · n · 1.2e-7 · sum(|a|)`" in task.prompt
    for case in TensorPuzzles().plan(3, "cpu").expected["cases"]:
        assert case.expected.dtype == case.args[0].dtype
        assert case.rtol == 1e-5
        if case.function == "cumsum" and case.expected.dtype == torch.float32:
            (a,) = case.args
            bound = 4 * len(a) * torch.finfo(torch.float32).eps * float(a.abs().sum())
            assert abs(case.atol - bound) <= 1e-7 + 1e-6 * bound
        else:
            assert case.atol == 1e-6


def _quiz() -> QuizTask:
    task = load_quest(QUEST).task("broadcast-shapes")
    assert isinstance(task, QuizTask)
    return task


def _broadcast(*shapes: tuple[int, ...]) -> str:
    """What torch says: the broadcast shape, or "error"."""
    try:
        return str(tuple(torch.broadcast_shapes(*shapes)))
    except RuntimeError:
        return "error"


#: question id -> the shapes it asks about (the arithmetic behind each accepted answer)
SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    "column-and-row": ((3, 1), (1, 4)),
    "missing-dimension": ((5, 1, 3), (4, 1)),
    "mismatch": ((2, 3), (3, 2)),
    "vector-and-column": ((3,), (4, 1)),
    "trailing-mismatch": ((4, 3), (4,)),
    "four-dimensions": ((8, 1, 6, 1), (7, 1, 5)),
    "cumsum-mask": ((1, 5), (5, 1)),  # i[None, :] <= i[:, None]
}


def test_broadcast_quiz_answers_are_what_torch_computes() -> None:
    task = _quiz()
    assert {q.id for q in task.questions} == set(SHAPES)
    answers = {q: _broadcast(*shapes) for q, shapes in SHAPES.items()}
    i = torch.arange(5)
    assert answers["cumsum-mask"] == str(tuple((i[None, :] <= i[:, None]).shape))
    assert_quiz_passes(f"{QUEST}/broadcast-shapes", task, answers)


def test_typical_broadcast_mistakes_are_marked_wrong() -> None:
    task = _quiz()
    answers = {q: _broadcast(*shapes) for q, shapes in SHAPES.items()}
    answers |= {
        "trailing-mismatch": "(4, 3)",  # aligning from the left
        "missing-dimension": "(5, 4, 1)",
        "mismatch": "(3, 3)",
    }
    verdict = grade_quiz(f"{QUEST}/broadcast-shapes", task, answers)
    wrong = {c.name for c in verdict.checks if not c.passed}
    assert wrong == {"trailing-mismatch", "missing-dimension", "mismatch"}
    assert verdict.score == 4 / 7
