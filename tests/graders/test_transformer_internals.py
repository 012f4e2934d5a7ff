"""transformer-internals: softmax, attention and a BPE merge graded for real in the sandbox,
and the numbers quiz with every accepted answer recomputed here.

Learner code runs only inside ``sandbox``'s jobs, never in this process.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import pytest
import torch

from bot.content.quiz_grading import grade_quiz
from bot.content.schema import BuildTask, QuizTask
from bot.worker.grade_job import SandboxRunner
from graders.base import Verdict
from graders.cases import CaseGrader
from graders.registry import load_grader
from graders.tasks import attention, stable_softmax
from graders.tasks.attention import Attention
from graders.tasks.bpe_merge import BpeMerge, merge_step
from graders.tasks.stable_softmax import StableSoftmax
from tests.graders.in_process import run_plan
from tests.graders.support import (
    assert_quiz_passes,
    failing,
    grade_in_sandbox,
    load_quest,
    load_solution,
)

QUEST = "transformer-internals"
SOLUTIONS = Path(__file__).parent / "solutions" / QUEST
#: file prefix -> (task id, grader)
TASKS: dict[str, tuple[str, type[CaseGrader]]] = {
    "softmax": ("stable-softmax", StableSoftmax),
    "attention": ("attention-from-scratch", Attention),
    "bpe": ("bpe-merge-step", BpeMerge),
}


def grade(zygote: SandboxRunner, name: str) -> Verdict:
    task, grader_class = TASKS[name.split("_")[0]]
    verdict, _ = grade_in_sandbox(zygote, grader_class(), f"{QUEST}/{task}", SOLUTIONS / name)
    return verdict


@pytest.mark.parametrize("prefix", sorted(TASKS))
def test_each_build_task_names_its_grader_and_interface(prefix: str) -> None:
    task_id, grader_class = TASKS[prefix]
    task = load_quest(QUEST).task(task_id)
    assert isinstance(task, BuildTask)
    grader = load_grader(task.grader)
    assert isinstance(grader, grader_class)
    assert grader.interface == task.function_names()


@pytest.mark.parametrize(
    "name",
    [
        "softmax_correct.py",
        "softmax_correct_logsumexp.py",  # float32 error near 1000 about 3e-5 relative
        "attention_correct.py",
        "bpe_correct.py",
    ],
)
def test_reference_solutions_pass(zygote: SandboxRunner, name: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "passed", [c.message for c in verdict.checks if not c.passed]
    assert verdict.score == 1.0


def _scientific(value: float) -> str:
    """``2e-4`` for 0.0002, as the prompts write tolerances."""
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


@pytest.mark.parametrize(
    ("task_id", "grader_class", "tolerance"),
    [
        ("stable-softmax", StableSoftmax, stable_softmax.TOLERANCE),
        ("attention-from-scratch", Attention, attention.TOLERANCE),
    ],
)
def test_prompts_state_the_accuracy_every_case_checks(
    task_id: str,
    grader_class: type[CaseGrader],
    tolerance: dict[torch.dtype, tuple[float, float]],
) -> None:
    prompt = " ".join(load_quest(QUEST).task(task_id).prompt.split())
    for dtype, (rtol, atol) in tolerance.items():
        assert str(dtype).removeprefix("torch.") in prompt
        assert f"{_scientific(rtol)} relative" in prompt, (dtype, rtol)
        assert _scientific(atol) in prompt, (dtype, atol)
    cases = grader_class().plan(1, "cpu").expected["cases"]
    assert {c.expected.dtype for c in cases} == set(tolerance)
    for case in cases:
        assert (case.rtol, case.atol) == tolerance[case.expected.dtype], case.label


def test_naive_softmax_fails_on_large_logits_and_is_told_why(zygote: SandboxRunner) -> None:
    verdict = grade(zygote, "softmax_wrong_naive.py")
    assert verdict.status == "failed"
    message = failing(verdict, "softmax: correct results")
    assert "large logits near +1000, 3x4 float32: " in message and "got nan" in message
    assert "Also failing: large logits near -1000" in message
    assert "Likely cause: your result has nan or inf where every answer is finite" in message
    assert "max of each row" in message


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("softmax_wrong_global_max.py", "rows near +1000, 0 and -1000, 3x4 float32: "),
        ("softmax_wrong_global_max.py", "Likely cause: your result has nan or inf"),
        ("softmax_wrong_sum_all.py", "Likely cause: your entries sum to 1 over the whole tensor"),
    ],
)
def test_softmax_mistakes_are_named(zygote: SandboxRunner, name: str, expected: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "failed"
    assert expected in failing(verdict, "softmax: correct results")


UNSCALED = "that is attention without the 1/sqrt(head_dim) scale"
BY_V_DIM = "you scaled by the width of the values (v.shape[-1])"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "attention_wrong_scale.py",
            {"attention": UNSCALED, "causal_attention": UNSCALED},
        ),
        ("attention_wrong_scale_v_dim.py", {"attention": BY_V_DIM, "causal_attention": BY_V_DIM}),
        ("attention_wrong_mask_off_by_one.py", {"causal_attention": "the mask is off by one"}),
        (
            "attention_wrong_mask_after_softmax.py",
            {"causal_attention": "the mask was applied after the softmax"},
        ),
    ],
)
def test_attention_mistakes_are_named(
    zygote: SandboxRunner, name: str, expected: dict[str, str]
) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "failed"
    for function, words in expected.items():
        assert f"Likely cause: {words}" in failing(verdict, f"{function}: correct results")
    if "attention" not in expected:  # the plain function is right, so its checks pass
        plain = [c for c in verdict.checks if c.name.startswith("attention:")]
        assert plain and all(c.passed for c in plain), [c.message for c in plain]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("bpe_wrong_tie.py", "Likely cause: on a tie you took the numerically smallest pair"),
        (
            "bpe_wrong_overlap.py",
            "a run of three equal ids: expected shape (2,), got (3,). "
            "Input: bpe_merge_step(torch.tensor([1, 1, 1])).",
        ),
        ("bpe_wrong_overlap.py", "Likely cause: after writing the new id, move past both"),
        (
            "bpe_wrong_count_no_overlap.py",
            "Input: bpe_merge_step(torch.tensor([9, 9, 9, 5, 6, 5, 6, 1, 2, 1, 2])).",
        ),
        (
            "bpe_wrong_count_no_overlap.py",
            "Likely cause: you counted only occurrences that do not overlap",
        ),
        ("bpe_wrong_new_id.py", "Likely cause: the new id must be max(ids) + 1"),
    ],
)
def test_bpe_mistakes_are_named(zygote: SandboxRunner, name: str, expected: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "failed"
    assert expected in failing(verdict, "bpe_merge_step: correct results")


def _drawn_long_only(seed: int, module: ModuleType) -> Verdict:
    """Our own wrong example judged on the plan's drawn inputs longer than 12 ids alone."""
    grader = BpeMerge()
    cases = grader.plan(seed, "cpu").expected["cases"]
    plan = grader.plan_of((c for c in cases if c.drawn and c.args[0].numel() > 12), seed)
    assert plan.calls
    return grader.judge(f"{QUEST}/bpe-merge-step", plan, run_plan(module, plan), "")


def test_a_long_failing_input_is_replayed_by_its_seed_and_still_explained() -> None:
    module = load_solution(SOLUTIONS / "bpe_wrong_new_id.py")
    for seed in (3, 2**62 + 5):
        message = failing(_drawn_long_only(seed, module), "bpe_merge_step: correct results")
        replay = f"grade YOUR_FILE --task {QUEST}/bpe-merge-step --seed {seed}`."
        assert replay in message and "Input:" not in message
        assert "Likely cause: the new id must be max(ids) + 1" in message


@pytest.mark.parametrize(
    ("name", "functions", "words"),
    [
        (
            "softmax_cheat.py",
            ("softmax",),
            "softmax is a library routine that computes the softmax for you",
        ),
        (
            "attention_cheat.py",
            ("attention", "causal_attention"),
            "scaled_dot_product_attention is a library attention routine",
        ),
    ],
)
def test_library_versions_fail_the_allowed_operations_check(
    zygote: SandboxRunner, name: str, functions: tuple[str, ...], words: str
) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "failed" and verdict.score == 0.5  # right answers, wrong means
    for function in functions:
        message = failing(verdict, f"{function}: allowed operations only")
        assert words in message and "torch recorded" in message


def test_bpe_reference_follows_the_stated_rule() -> None:
    assert merge_step([1, 1, 1]) == [2, 1]
    assert merge_step([1, 1, 1, 1]) == [2, 2]
    assert merge_step([1, 2, 3, 1, 2, 3]) == [4, 3, 4, 3]  # the prompt's worked example
    assert merge_step([4, 6, 9, 0, 1, 3, 4, 6, 9, 0, 1, 3]) == [10, 9, 0, 1, 3, 10, 9, 0, 1, 3]
    assert merge_step([5, 3, 8, 1]) == [9, 8, 1]
    # (1, 1) twice with overlaps, tied with (2, 3): the run's pair comes first
    assert merge_step([1, 1, 1, 2, 3, 2, 3]) == [4, 1, 2, 3, 2, 3]
    assert merge_step([9, 9, 9, 5, 6, 5, 6, 1, 2, 1, 2]) == [10, 9, 5, 6, 5, 6, 1, 2, 1, 2]
    assert merge_step([5, 1, 2, 1, 2]) == [5, 6, 6]  # (1, 2) starts at odd positions only


def _quiz() -> QuizTask:
    task = load_quest(QUEST).task("attention-numbers")
    assert isinstance(task, QuizTask)
    return task


def _computed_answers() -> dict[str, str]:
    """Every answer from the configuration the question states."""
    logits = torch.tensor([1002.0, 1000.0, 1000.0], dtype=torch.float64)
    heads, seq = 12, 128
    visible = int(torch.ones(seq, seq).tril().sum())  # query i sees keys 0..i
    score_bytes = 8 * heads * 1024 * 1024 * torch.tensor(0.0).element_size()
    return {
        "exp-overflow": str(torch.exp(torch.tensor(1000.0)).item()),
        "equal-large-logits": str(torch.softmax(torch.tensor([1000.0, 1000.0]), 0)[0].item()),
        "shifted-logits": f"{torch.softmax(logits, 0)[0].item():.3g}",
        "dot-product-spread": str(math.sqrt(64 * 1.0)),  # variance 1 per product, 64 products
        "score-entries": str(heads * seq * seq),
        "causal-entries": str(heads * visible),
        "score-memory": str(score_bytes / 2**20),
        "gpt2-vocab": str(256 + 50_000 + 1),
        "merge-a-run": str(merge_step([1, 1, 1])),
    }


def test_quiz_answers_are_the_computed_values() -> None:
    task = _quiz()
    answers = _computed_answers()
    assert {q.id for q in task.questions} == set(answers)
    assert answers["exp-overflow"] == "inf"
    for question in task.questions:
        if question.tolerance is not None:
            (accepted,) = question.numeric_answers()
            assert math.isclose(accepted, float(answers[question.id]), rel_tol=question.tolerance)
    assert_quiz_passes(f"{QUEST}/attention-numbers", task, answers)


def test_dot_product_spread_matches_a_simulation() -> None:
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 20_000, 64, generator=gen, dtype=torch.float64)
    assert math.isclose((q * k).sum(-1).std().item(), 8.0, rel_tol=0.03)


def test_typical_quiz_mistakes_are_marked_wrong() -> None:
    wrong = {
        "exp-overflow": "nan",
        "equal-large-logits": "1",
        "shifted-logits": "0.333",
        "dot-product-spread": "64",  # the variance, not the standard deviation
        "score-entries": "16384",  # one head only
        "causal-entries": "98304",  # half of every head's n², forgetting the diagonal
        "score-memory": "48",  # one sequence only
        "gpt2-vocab": "50256",  # forgot the special token
        "merge-a-run": "[2, 2, 1]",  # overlapping replacement
    }
    verdict = grade_quiz(f"{QUEST}/attention-numbers", _quiz(), wrong)
    assert verdict.score == 0.0, [c.message for c in verdict.checks if c.passed]
