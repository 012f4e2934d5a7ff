"""Each example submission graded for real: validated, run in the sandbox, judged.

Learner code runs only inside ``sandbox``'s jobs, never in this process.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.worker.grade_job import SandboxRunner
from graders.base import Verdict
from graders.tasks.matmul_three_ways import MatmulThreeWays
from tests.graders.support import grade_in_sandbox

TASK = "go-brrrr/matmul-three-ways"
SOLUTIONS = Path(__file__).parent / "solutions"
FUNCTIONS = ("matmul_loops", "matmul_dot", "matmul_columns")


def grade(zygote: SandboxRunner, name: str) -> Verdict:
    verdict, _ = grade_in_sandbox(zygote, MatmulThreeWays(), TASK, SOLUTIONS / name)
    return verdict


def messages(verdict: Verdict) -> str:
    return "\n".join(f"{c.name}: {c.message}" for c in verdict.checks)


@pytest.mark.parametrize("name", ["correct.py", "correct_alt.py", "correct_magics.ipynb"])
def test_correct_submissions_pass(zygote: SandboxRunner, name: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "passed", messages(verdict)
    assert verdict.score == 1.0


def test_a_correct_triple_loop_grades_in_under_a_second(zygote: SandboxRunner) -> None:
    grade(zygote, "correct.py")  # the first job may pay for warming the zygote up
    started = time.perf_counter()
    verdict = grade(zygote, "correct.py")
    took = time.perf_counter() - started
    print(f"a warm grade of the correct triple loop: {took:.2f} s")
    assert verdict.status == "passed"
    # measured: 0.06 to 0.08 s in three runs on a 2-core host at load 3; a second is room for
    # a loaded machine, and still fails a grade that forks a fresh torch (seconds)
    assert took < 1.0


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("wrong_values.py", "Likely cause: each entry misses the last term"),
        ("wrong_list.py", "returned a list"),
        ("wrong_none.py", "returned None"),
        ("wrong_shape.py", "Likely cause: you computed the transpose"),
        ("wrong_dtype.py", "expected dtype float64, got float32"),
        ("wrong_index.py", "raised IndexError"),
        ("wrong_missing.py", "matmul_columns is not defined"),
        ("cheat_operator.py", "the @ operator is a matrix product"),
        ("cheat_hidden.py", "imports torch.matmul"),
        ("cheat_dynamic.py", "getattr with a computed name"),
    ],
)
def test_wrong_and_cheating_submissions_fail(
    zygote: SandboxRunner, name: str, expected: str
) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "failed"
    assert verdict.score < 1.0
    assert expected in messages(verdict)


def test_the_sandbox_op_record_backs_up_the_scan(zygote: SandboxRunner) -> None:
    verdict = grade(zygote, "cheat_operator.py")
    assert "torch recorded" in messages(verdict)


def test_numpy_cheats_fail_whether_or_not_numpy_is_installed(zygote: SandboxRunner) -> None:
    verdict, result = grade_in_sandbox(
        zygote, MatmulThreeWays(), TASK, SOLUTIONS / "cheat_numpy.py"
    )
    assert verdict.status == "failed"
    assert verdict.score <= 0.5  # right answers at best, never the method checks
    if result.status == "load_error":  # no numpy in the job: the import itself failed
        assert "numpy" in result.message
        return
    # numpy ran and got the answers right; each function still fails its method check
    assert result.status == "ok", result.message
    checks = {c.name: c.passed for c in verdict.checks}
    assert [checks[f"{f}: correct results"] for f in FUNCTIONS] == [True] * 3
    assert [checks[f"{f}: builds the product itself"] for f in FUNCTIONS] == [False] * 3


def test_a_wrong_but_honest_file_is_not_accused(zygote: SandboxRunner) -> None:
    verdict = grade(zygote, "wrong_values.py")
    rules = [c for c in verdict.checks if c.name.endswith("builds the product itself")]
    assert [c.mark for c in rules] == ["–"] * 3, messages(verdict)
    assert "dtype=A.dtype" in messages(grade(zygote, "wrong_dtype.py"))
