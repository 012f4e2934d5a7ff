"""training-path: the manual-backward and LoRA graders run for real through the sandbox,
and the LoRA budget quiz recomputed from GPT-2 small's shapes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bot.content import BuildTask, Content, answer_matches
from bot.content.quiz_grading import grade_quiz
from bot.worker.grade_job import SandboxRunner
from graders.base import Verdict
from graders.comparison import compare_tensor
from graders.registry import load_grader
from graders.source_scan import Rules, scan
from graders.tasks.lora_linear import LoraLinear
from graders.tasks.mlp_backward import GRADIENTS, MlpBackward
from tests.graders.support import grade_in_sandbox, load_solution, message, passed, quiz_task

BACKWARD = "training-path/manual-backward"
LORA = "training-path/lora-linear"
QUIZ = "training-path/lora-budget"
SOLUTIONS = Path(__file__).parent / "solutions" / "training-path"

# GPT-2 small, as in its config.json
N_LAYER, N_EMBD, VOCAB, N_CTX = 12, 768, 50257, 1024


pytestmark = pytest.mark.usefixtures("one_thread")


def grade(zygote: SandboxRunner, grader_name: str, task: str, name: str) -> Verdict:
    verdict, _ = grade_in_sandbox(zygote, load_grader(grader_name), task, SOLUTIONS / name)
    return verdict


def test_the_quest_names_these_graders_and_interfaces(content: Content) -> None:
    for ref, grader_type in ((BACKWARD, MlpBackward), (LORA, LoraLinear)):
        task = content.find_task(ref)[1]
        assert isinstance(task, BuildTask)
        grader = load_grader(task.grader)
        assert isinstance(grader, grader_type)
        assert task.function_names() == grader.interface
    backward = content.find_task(BACKWARD)[1]
    assert "((y - t) ** 2).mean()" in backward.prompt and "backward" in backward.prompt
    lora = content.find_task(LORA)[1]
    assert "alpha / r" in lora.prompt and "F.linear" in lora.prompt
    assert content.quest("training-path").prerequisite == "forward-pass"


# -- manual backward ----------------------------------------------------------------------


def test_the_backward_reference_is_autograd_on_the_stated_loss() -> None:
    """The formulas in the hints give autograd's gradients (so the hints are right)."""
    plan = MlpBackward().plan(7, "cpu").expected["cases"]
    x, w1, b1, w2, b2, t = plan[0].args
    z = x @ w1.T + b1
    h = z.relu()
    dy = 2 * (h @ w2.T + b2 - t) / t.numel()
    dz = (dy @ w2) * (z > 0)
    mine = {"grad_w2": dy.T @ h, "grad_b2": dy.sum(0), "grad_w1": dz.T @ x, "grad_b1": dz.sum(0)}
    for function in GRADIENTS:
        first = next(c for c in plan if c.function == function and c.args[0] is x)
        assert compare_tensor(first, mine[function]).ok, function


def test_the_correct_backward_passes(zygote: SandboxRunner) -> None:
    verdict = grade(zygote, "mlp_backward", BACKWARD, "backward_correct.py")
    assert verdict.status == "passed", [c.message for c in verdict.checks if not c.passed]
    assert verdict.score == 1.0 and len(verdict.checks) == 8


def test_the_backward_tolerance_holds_over_many_seeds() -> None:
    grader, right = MlpBackward(), load_solution(SOLUTIONS / "backward_correct.py")
    for seed in range(20):
        for case in grader.plan(seed, "cpu").expected["cases"]:
            assert compare_tensor(case, getattr(right, case.function)(*case.args)).ok


@pytest.mark.parametrize(
    ("name", "wrong", "cause"),
    [
        ("backward_wrong_no_mask.py", {"grad_w1", "grad_b1"}, "zeros wherever the pre-act"),
        ("backward_wrong_mean.py", set(GRADIENTS), "divide by y.numel(), not the batch size"),
        ("backward_wrong_transpose.py", {"grad_w2"}, "came out transposed, (H, O)"),
    ],
)
def test_backward_mistakes_fail_where_they_are_and_are_named(
    zygote: SandboxRunner, name: str, wrong: set[str], cause: str
) -> None:
    verdict = grade(zygote, "mlp_backward", BACKWARD, name)
    assert verdict.status == "failed"
    results = {f: passed(verdict)[f"{f}: correct results"] for f in GRADIENTS}
    assert {f for f, ok in results.items() if not ok} == wrong
    for function in wrong:
        text = message(verdict, f"{function}: correct results")
        assert cause in text.partition("Likely cause: ")[2], text


def test_float32_rounding_in_a_cancelling_sum_is_forgiven() -> None:
    """An entry that nearly cancels keeps the rounding of its terms: computing the same
    gradients in another order, in float32, passes every case of many plans."""
    grader = MlpBackward()
    for seed in range(20):
        for case in grader.plan(seed, "cpu").expected["cases"]:
            x, w1, b1, w2, b2, t = case.args
            z = x @ w1.T + b1
            dy = (2 / t.numel()) * (torch.relu(z) @ w2.T + b2 - t)
            dz = torch.where(z > 0, dy @ w2, 0)
            reordered = {
                "grad_w2": torch.einsum("no,nh->oh", dy, torch.relu(z)),
                "grad_b2": dy.flip(0).sum(0),
                "grad_w1": torch.einsum("nh,nd->hd", dz, x),
                "grad_b1": dz.flip(0).sum(0),
            }
            assert compare_tensor(case, reordered[case.function]).ok, (seed, case.label)


def test_autograd_fails_the_allowed_operations_checks(zygote: SandboxRunner) -> None:
    verdict = grade(zygote, "mlp_backward", BACKWARD, "backward_cheat_autograd.py")
    assert verdict.status == "failed"
    checks = passed(verdict)
    for function in GRADIENTS:
        assert checks[f"{function}: correct results"]
        assert not checks[f"{function}: allowed operations only"]
    text = message(verdict, "grad_w2: allowed operations only")
    assert "requires_grad_ is autograd machinery; derive the gradients yourself" in text
    assert "torch.autograd.grad" in text and "torch recorded" in text


def test_gradient_names_are_not_mistaken_for_autograd() -> None:
    """The scan matches whole names: grad_w1, a local `grad` and torch.no_grad are fine."""
    source = (
        "import torch\n"
        "def helper(x):\n    grad = x * 2\n    return grad\n"
        "def grad_w1(x, w1, b1, w2, b2, t):\n"
        "    with torch.no_grad():\n        return helper(x) + grad_b1(x, w1, b1, w2, b2, t)\n"
        "def grad_b1(x, w1, b1, w2, b2, t):\n    return x.grad\n"
    )
    rules = Rules(
        MlpBackward.forbidden["grad_w1"],
        what=MlpBackward.forbidden_what,
        matmul_operator=False,
        whole_dot=False,
        independent=False,
    )
    reports = scan(source, ("grad_w1", "grad_b1"), rules)
    assert [str(f) for f in reports["grad_b1"].findings] == [
        "line 9 `return x.grad`: grad is autograd machinery; derive the gradients yourself"
    ]
    # grad_w1 calls grad_b1, so it inherits that finding, and nothing else
    assert [f.line for f in reports["grad_w1"].findings] == [9]


# -- LoRA ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["lora_correct.py", "lora_correct_merged.py"])
def test_correct_lora_layers_pass(zygote: SandboxRunner, name: str) -> None:
    verdict = grade(zygote, "lora_linear", LORA, name)
    assert verdict.status == "passed", [c.message for c in verdict.checks if not c.passed]
    assert verdict.score == 1.0 and len(verdict.checks) == 3


def test_lora_starts_at_the_base_model() -> None:
    cases = LoraLinear().plan(3, "cpu").expected["cases"]
    (first,) = [c for c in cases if "all zero" in c.label and c.function == "lora_linear"]
    x, w, b, _, b_lora, _ = first.args
    assert not b_lora.any()
    assert compare_tensor(first, x @ w.T + b).ok


def test_lora_tolerance_holds_over_many_seeds() -> None:
    grader = LoraLinear()
    solutions = [
        load_solution(SOLUTIONS / n) for n in ("lora_correct.py", "lora_correct_merged.py")
    ]
    for seed in range(20):
        for case in grader.plan(seed, "cpu").expected["cases"]:
            for solution in solutions:
                assert compare_tensor(case, getattr(solution, case.function)(*case.args)).ok


def test_lora_scaled_by_alpha_alone_fails(zygote: SandboxRunner) -> None:
    verdict = grade(zygote, "lora_linear", LORA, "lora_wrong_scale.py")
    assert verdict.status == "failed"
    for function in ("lora_linear", "merge_lora"):
        text = message(verdict, f"{function}: correct results")
        assert "(not by alpha alone)" in text.partition("Likely cause: ")[2], text
    wrong = load_solution(SOLUTIONS / "lora_wrong_scale.py")
    for case in LoraLinear().plan(5, "cpu").expected["cases"]:
        if case.function == "lora_linear":  # only the zero-B case cannot tell
            ok = compare_tensor(case, wrong.lora_linear(*case.args)).ok
            assert ok == ("all zero" in case.label), case.label


def test_lora_with_swapped_factors_fails(zygote: SandboxRunner) -> None:
    """A non-square w makes swapped factors raise; the square fixed layer lets them run,
    and its wrong numbers name the slip."""
    verdict = grade(zygote, "lora_linear", LORA, "lora_wrong_swapped.py")
    assert verdict.status == "failed"
    causes = {"lora_linear": "applied b_lora first", "merge_lora": "the update is transposed"}
    for function, cause in causes.items():
        text = message(verdict, f"{function}: correct results")
        assert cause in text.partition("Likely cause: ")[2], text
    wrong = load_solution(SOLUTIONS / "lora_wrong_swapped.py")
    for case in LoraLinear().plan(5, "cpu").expected["cases"]:
        w = case.args[1] if case.function == "lora_linear" else case.args[0]
        if w.shape[0] != w.shape[1]:
            with pytest.raises(RuntimeError):
                getattr(wrong, case.function)(*case.args)


def test_lora_through_f_linear_fails_the_allowed_operations_check(
    zygote: SandboxRunner,
) -> None:
    verdict = grade(zygote, "lora_linear", LORA, "lora_cheat_linear.py")
    assert verdict.status == "failed"
    checks = passed(verdict)
    assert checks["lora_linear: correct results"] and checks["merge_lora: correct results"]
    text = message(verdict, "lora_linear: allowed operations only")
    assert "linear is a library layer" in text and "torch recorded" in text


# -- the quiz -----------------------------------------------------------------------------


def expected_answers() -> dict[str, float]:
    """Every numeric answer, from GPT-2 small's shapes and a rank-8 adapter."""
    c, rank = N_EMBD, 8
    linear = [(c, 3 * c), (c, c), (c, 4 * c), (4 * c, c)]
    block = sum(i * o + o for i, o in linear) + 4 * c
    full = VOCAB * c + N_CTX * c + N_LAYER * block + 2 * c
    one = rank * (c + c)
    q_and_v = N_LAYER * 2 * one
    b_lora, a = torch.randn(c, rank, dtype=torch.float64), torch.randn(rank, c, dtype=torch.float64)
    return {
        "one-adapter": one,
        "q-and-v": q_and_v,
        "full-fine-tune": full,
        "percent": round(100 * q_and_v / full, 3),
        "adam-state": full * 2 * 4,
        "update-rank": int(torch.linalg.matrix_rank(b_lora @ a)),
    }


def test_lora_quiz_answers_are_the_computed_values(content: Content) -> None:
    quiz = quiz_task(content, QUIZ)
    expected = expected_answers()
    assert expected["q-and-v"] == 12 * 2 * 8 * (768 + 768) == 294_912
    assert expected["full-fine-tune"] == 124_439_808
    # PEFT on the fused c_attn (768 -> 2304) lands on the same count, as the exercise says
    assert expected["q-and-v"] == N_LAYER * 8 * (N_EMBD + 3 * N_EMBD)
    assert {q.id for q in quiz.questions} == set(expected)
    for question in quiz.questions:
        assert question.numeric_answers() == (expected[question.id],), question.id
        assert answer_matches(str(expected[question.id]), question)


def test_lora_quiz_rejects_typical_slips(content: Content) -> None:
    quiz = quiz_task(content, QUIZ)
    expected = expected_answers()
    right = {q.id: f"{expected[q.id]:,}" for q in quiz.questions}
    right["percent"] = "0.237%"
    assert grade_quiz(QUIZ, quiz, right).score == 1.0
    slips = {
        "one-adapter": str(N_EMBD * N_EMBD),  # the full matrix, not the adapter
        "q-and-v": str(2 * 8 * (N_EMBD + N_EMBD)),  # one layer only
        "full-fine-tune": str(expected["full-fine-tune"] + VOCAB * N_EMBD),  # head counted twice
        "percent": "0.00237",  # a fraction, not a percentage
        "adam-state": str(expected["full-fine-tune"] * 4),  # one moment, not two
        "update-rank": "768",
    }
    verdict = grade_quiz(QUIZ, quiz, slips)
    assert verdict.score == 0.0, [c.message for c in verdict.checks if c.passed]
