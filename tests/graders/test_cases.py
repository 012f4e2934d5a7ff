"""The case framework every build grader stands on, on a toy grader: what a failing check
says (the input, or how to replay it), likely causes, fixed cases, tolerance scales and
rule checks that are not made until results are right."""

from __future__ import annotations

from types import MappingProxyType

import torch

from graders.base import Verdict
from graders.cases import CaseGrader
from graders.comparison import Case, Mistake, compare_tensor, error_ratio
from sandbox.api import SandboxResult
from tests.graders.in_process import load, run_plan

TASK = "toy/double"
HINT = "double(x) is 2 * x."
CAUSE = "you added one instead of doubling."


class Double(CaseGrader):
    name = "double"
    interface = ("double",)
    forbidden = MappingProxyType({"double": frozenset({"mul"})})
    hints = MappingProxyType({"double": HINT})

    def fixed_cases(self, device: str) -> list[Case]:
        return [_case(torch.tensor([1.5, -0.1, 3.0]), drawn=False)]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        return [_case(torch.randn(4, 5, generator=gen, dtype=torch.float64))]


def _case(x: torch.Tensor, drawn: bool = True) -> Case:
    label = f"{'fixed' if not drawn else 'drawn'} {tuple(x.shape)}"
    mistakes = (Mistake(x + 1, CAUSE),)
    return Case("double", (x,), 2 * x, label, mistakes=mistakes, drawn=drawn)


def _grade(code: str, seed: int = 5, drawn_only: bool = False) -> Verdict:
    grader = Double()
    plan = grader.plan(seed, "cpu")
    if drawn_only:
        plan = grader.plan_of([c for c in plan.expected["cases"] if c.drawn], seed)
    result: SandboxResult = run_plan(load(code), plan)
    return grader.judge(TASK, plan, result, code)


CORRECT = "def double(x):\n    return x + x\n"
PLUS_ONE = "def double(x):\n    return x + 1\n"
SQUARE = "def double(x):\n    return x * x\n"


def test_a_small_failing_input_is_shown_as_python_that_rebuilds_it() -> None:
    (check, _) = _grade(SQUARE).checks
    assert not check.passed and check.message.startswith("failed 2 of 2 cases. fixed (3,)")
    shown = check.message.split("Input: ", 1)[1].split(". ", 1)[0]
    assert shown.startswith("double(torch.tensor(")
    rebuilt = eval(shown.removeprefix("double"), {"torch": torch})
    assert torch.equal(rebuilt, Double().fixed_cases("cpu")[0].args[0])


def test_non_finite_inputs_are_shown_as_python_too() -> None:
    grader = Double()
    logits = torch.tensor([float("-inf"), 1.5, float("nan"), float("inf")])
    plan = grader.plan_of([_case(logits, drawn=False)], seed=3)
    verdict = grader.judge(TASK, plan, run_plan(load(SQUARE), plan), SQUARE)
    shown = verdict.checks[0].message.split("Input: double", 1)[1].split(". ", 1)[0]
    rebuilt = eval(shown, {"torch": torch})
    assert torch.equal(rebuilt.isnan(), logits.isnan())
    assert torch.equal(rebuilt.nan_to_num(0.0), logits.nan_to_num(0.0))


def test_a_large_failing_input_gets_the_command_that_replays_its_draw() -> None:
    (check, _) = _grade(SQUARE, seed=987654321, drawn_only=True).checks
    assert "Input:" not in check.message
    assert f"`brrrbot grade YOUR_FILE --task {TASK} --seed 987654321`" in check.message


def test_a_listed_mistake_is_named_instead_of_the_hint() -> None:
    (named, _) = _grade(PLUS_ONE).checks
    assert named.message.endswith(f"Likely cause: {CAUSE}") and HINT not in named.message
    (unnamed, _) = _grade(SQUARE).checks
    assert "Likely cause" not in unnamed.message and unnamed.message.endswith(HINT)


def test_rules_are_not_checked_until_results_are_right() -> None:
    verdict = _grade(SQUARE)
    correct, rule = verdict.checks
    assert (correct.mark, rule.mark) == ("✗", "–")
    assert not rule.passed and not rule.checked and "not checked" in rule.message
    assert verdict.status == "failed" and verdict.score == 0.0
    assert _grade(CORRECT).checks[1].mark == "✓"


def test_the_summary_names_the_first_failure_without_repeating_it() -> None:
    verdict = _grade(SQUARE)
    assert verdict.feedback == "0 of 2 checks passed. Start with “double: correct results” below."
    assert all(c.message not in verdict.feedback for c in verdict.checks)


def test_fixed_cases_are_in_every_plan_and_drawn_ones_follow_the_seed() -> None:
    grader = Double()
    plans = [grader.plan(seed, "cpu") for seed in (1, 1, 2)]
    fixed = [[c.args[0] for c in p.expected["cases"] if not c.drawn] for p in plans]
    drawn = [[c.args[0] for c in p.expected["cases"] if c.drawn] for p in plans]
    assert all(torch.equal(f[0], fixed[0][0]) for f in fixed)
    assert torch.equal(drawn[0][0], drawn[1][0]) and not torch.equal(drawn[0][0], drawn[2][0])
    assert [p.seed for p in plans] == [1, 1, 2]


def test_a_tolerance_scale_replaces_the_size_of_the_answer() -> None:
    """A sum that cancels to almost nothing is judged against the size of its terms."""
    want = torch.tensor([1e-9], dtype=torch.float64)
    got = want + 1e-5
    tight = Case("f", (), want, "", rtol=1e-4, atol=0.0)
    scaled = Case("f", (), want, "", rtol=1e-4, atol=0.0, scale=torch.tensor([1.0]))
    assert not compare_tensor(tight, got).ok and compare_tensor(scaled, got).ok
    assert abs(error_ratio(scaled, got) - 0.1) < 1e-9
    assert error_ratio(scaled, want) == 0.0
    assert error_ratio(scaled, torch.tensor([float("nan")])) == float("inf")
