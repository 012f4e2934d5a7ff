"""inference-engine/int8-weights: the int8 grader run for real through the sandbox, its
cases checked against the rule recomputed here in plain Python, and the bytes-per-step
note recomputed from Llama 2 7B's config."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from bot.content.schema import BuildTask
from bot.worker.grade_job import SandboxRunner
from graders.base import Verdict
from graders.comparison import Case, compare_tensor
from graders.registry import load_grader
from graders.tasks.int8_weights import Int8Weights
from sandbox.api import SandboxResult
from tests.graders.in_process import load, run_plan
from tests.graders.support import failing, grade_in_sandbox, load_quest, load_solution, passed

QUEST = "inference-engine"
TASK = f"{QUEST}/int8-weights"
SOLUTIONS = Path(__file__).parent / "solutions" / QUEST
FUNCTIONS = ("weight_scales", "quantize", "int8_linear")

# Llama 2 7B, as in its config.json
HIDDEN, INTERMEDIATE, LAYERS, VOCAB = 4096, 11008, 32, 32000
H100_BANDWIDTH = 3.35e12  # the decode-ceilings quiz's

pytestmark = pytest.mark.usefixtures("one_thread")


def grade(zygote: SandboxRunner, name: str) -> Verdict:
    verdict, _ = grade_in_sandbox(zygote, Int8Weights(), TASK, SOLUTIONS / name)
    return verdict


def cases_of(function: str, cases: list[Case] | tuple[Case, ...]) -> list[Case]:
    return [c for c in cases if c.function == function]


def plans(seeds: range) -> list[Case]:
    return [c for seed in seeds for c in Int8Weights().plan(seed, "cpu").expected["cases"]]


# -- the quest and its prompt -------------------------------------------------------------


def test_the_quest_names_the_grader_and_states_what_it_checks() -> None:
    task = load_quest(QUEST).task("int8-weights")
    assert isinstance(task, BuildTask)
    assert load_grader(task.grader).interface == task.function_names() == FUNCTIONS
    prompt = " ".join(task.prompt.split())  # as read, whatever the line breaks
    for stated in (
        "`(out,)`",
        "**int8** `(out, in)`",
        "max(|w[r]|) / 127",
        "exactly `1.0`",
        "clamp(round(w / scale[:, None]), -127, 127)",
        "rounded half to even",
        "never -128",
        "`(B, T, in)`",
        "`x @ (q * scale[:, None]).T + bias`",
        "within `1e-6` relative",
        "`quantize` exactly, and in int8",
        "more than 0.05",
        "`(in + 2) · 2⁻²³`",
        "`|x| @ |q * scale[:, None]|.T + |bias|`",
        "`in` up to 2048",
        "`brrrbot grade FILE --task inference-engine/int8-weights`",
        "`/submit`",
    ):
        assert " ".join(stated.split()) in prompt, stated
    grader = Int8Weights()
    for name in ("quantize_per_channel", "int_repr", "ao", "_weight_int8pack_mm"):
        assert f"{name}`" in prompt
        assert all(name in grader.forbidden[f] for f in FUNCTIONS)
    for allowed in ("matmul", "linear"):
        assert not any(allowed in grader.forbidden[f] for f in FUNCTIONS)


# -- the cases, against the rule recomputed here ------------------------------------------


def python_scales(w: torch.Tensor) -> list[float]:
    rows = [max(abs(v) for v in row) for row in w.tolist()]
    return [1.0 if m == 0 else m / 127 for m in rows]


def python_quantize(w: torch.Tensor, scale: torch.Tensor) -> list[list[int]]:
    """Python's round() is half to even; the division is float64 here, which the cases make
    agree with float32 (see the next test)."""
    return [
        [max(-127, min(127, round(v / s))) for v in row]
        for row, s in zip(w.tolist(), scale.tolist(), strict=True)
    ]


def python_linear(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor, b: torch.Tensor) -> list:
    rows = [[qi * s for qi in row] for row, s in zip(q.tolist(), scale.tolist(), strict=True)]
    flat = x.reshape(-1, x.shape[-1]).tolist()
    return [
        [
            math.fsum(xi * wi for xi, wi in zip(xr, wr, strict=True)) + bo
            for wr, bo in zip(rows, b.tolist(), strict=True)
        ]
        for xr in flat
    ]


def test_expected_results_are_the_rule_computed_in_plain_python() -> None:
    for case in plans(range(6)):
        if case.function == "weight_scales":
            (w,) = case.args
            assert case.expected.dtype == torch.float32
            for got, want in zip(case.expected.tolist(), python_scales(w), strict=True):
                assert got == pytest.approx(want, rel=1e-7), case.label
        elif case.function == "quantize":
            assert case.expected.dtype == torch.int8
            assert case.expected.tolist() == python_quantize(*case.args), case.label
        elif case.args[0].shape[-1] <= 64:
            x, q, scale, b = case.args
            want = torch.tensor(python_linear(x, q, scale, b), dtype=torch.float64)
            got = case.expected.double().reshape(want.shape)
            assert torch.allclose(got, want, rtol=1e-6, atol=1e-6), case.label


def test_every_ratio_is_an_exact_tie_or_clear_of_one_whichever_way_it_is_divided() -> None:
    """The prompt's promise: float32 division, float64 division and a multiplication by the
    reciprocal give the same integers, because a ratio is exactly k + 0.5 in all three or
    more than 0.05 from any half-integer."""
    for case in cases_of("quantize", plans(range(30))):
        w, scale = case.args
        wide = w.double() / scale.double()[:, None]
        ways = (w / scale[:, None], w * (1 / scale)[:, None], wide)
        distance = (wide - wide.floor() - 0.5).abs()
        ties = distance == 0
        assert bool((distance[~ties] > 0.05).all()), case.label
        for way in ways:
            assert torch.equal(way.double()[ties], wide[ties]), case.label
            assert torch.equal(torch.round(way).clamp(-127, 127).to(torch.int8), case.expected)


def test_the_fixed_cases_hold_what_each_slip_needs() -> None:
    """Ties on both sides of zero and of both parities, an all-zero row with scale 1.0,
    entries past -127.5 and 127.5, a row whose largest magnitude is negative, square and
    non-square w, in = 1024 with a (B, T, in) x, and a 2-D x."""
    fixed = Int8Weights().fixed_cases("cpu")
    assert not any(c.drawn for c in fixed)
    scales = cases_of("weight_scales", fixed)
    rows = [row for c in scales for row in c.args[0].tolist()]
    assert any(not any(row) for row in rows)
    assert any(max(row, key=abs) < 0 < max(row) for row in rows)  # |min| wins over max
    assert any(max(row) < 0 for row in rows)
    assert {c.args[0].shape[0] == c.args[0].shape[1] for c in scales} == {True, False}

    ratios = [
        v / s
        for c in cases_of("quantize", fixed)
        for row, s in zip(c.args[0].tolist(), c.args[1].tolist(), strict=True)
        for v in row
    ]
    assert {-3.5, -2.5, -0.5, 0.5, 2.5, 3.5, 126.5, -126.5} <= set(ratios)
    assert min(ratios) < -128.5 and max(ratios) > 128.5
    assert -127.0 in [round(r, 3) for r in ratios]
    zero_rows = [
        s
        for c in cases_of("quantize", fixed)
        for row, s in zip(c.args[0].tolist(), c.args[1].tolist(), strict=True)
        if not any(row)
    ]
    assert zero_rows == [1.0]

    layers = cases_of("int8_linear", fixed)
    assert {c.args[0].dim() for c in layers} == {2, 3}
    assert max(c.args[1].shape[1] for c in layers) == 1024
    assert any(c.args[1].shape[0] == c.args[1].shape[1] for c in layers)
    assert all(bool((c.args[3].abs() >= 0.25).all()) for c in layers)


def test_the_layer_tolerance_is_the_stated_bound_and_summation_order_shows() -> None:
    """Each entry may differ by (in + 2) * 2**-23 times the layer on absolute values: the
    float32 result of the plain formula is not the float64 reference rounded (the order of
    summing shows at in = 1024), and a strictly left-to-right float32 sum passes too."""
    (big,) = [c for c in Int8Weights().fixed_cases("cpu") if c.label.startswith("x (2, 3, 1024)")]
    x, q, scale, b = big.args
    assert big.rtol == (1024 + 2) / 2**23 and big.atol == 0
    size = x.double().abs() @ (q.double() * scale.double()[:, None]).abs().T + b.double().abs()
    assert big.scale is not None and torch.allclose(big.scale, size, rtol=1e-12)
    w = q.float() * scale[:, None]
    plain = x @ w.T + b
    assert not torch.equal(plain, big.expected)
    assert compare_tensor(big, plain).ok
    running = torch.zeros(2, 3, 40)
    for i in range(1024):
        running = running + x[..., i : i + 1] * w[:, i]
    assert compare_tensor(big, running + b).ok


# -- through the sandbox ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["int8_correct.py", "int8_correct_factored.py"])
def test_correct_solutions_pass_with_the_bytes_note(zygote: SandboxRunner, name: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "passed", [c.message for c in verdict.checks if not c.passed]
    assert verdict.score == 1.0 and len(verdict.checks) == 6
    (note,) = verdict.notes
    assert "Bytes per decode step" in note and "Llama 2 7B" in note


#: each wrong file -> function -> what its failing check says (the rest must pass)
WRONG: dict[str, dict[str, tuple[str, ...]]] = {
    "int8_wrong_round_away.py": {
        "quantize": ("entries wrong", "Likely cause: ties were rounded half away from zero"),
    },
    "int8_wrong_range.py": {
        "weight_scales": ("Likely cause: you divided by 128",),
        "quantize": ("expected -127, got -128", "Likely cause: you clamped to -128..127"),
    },
    "int8_wrong_zero_row_and_bias.py": {
        "weight_scales": ("expected 1, got 0", "Likely cause: an all-zero row got scale 0"),
        "int8_linear": ("Likely cause: the bias is missing",),
    },
    "int8_bad_types.py": {
        "weight_scales": (
            "expected shape (6,), got (6, 1)",
            "Likely cause: the scales came back (out, 1)",
        ),
        "quantize": ("expected dtype int8, got int64", "Likely cause: the values are right"),
        "int8_linear": ("returned a list; build and return a torch.Tensor instead",),
    },
    "int8_bad_float_missing.py": {
        "quantize": ("expected dtype int8, got float32", "torch.round returns floats"),
        "int8_linear": ("int8_linear is not defined at the top level of your file",),
    },
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_files_fail_where_they_are_wrong_saying_why(zygote: SandboxRunner, name: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "failed" and verdict.score < 1.0
    for function, expected in WRONG[name].items():
        text = failing(verdict, f"{function}: correct results")
        assert all(e in text for e in expected), text
    right = [c for c in verdict.checks if c.name.split(":")[0] not in WRONG[name]]
    assert all(c.passed for c in right), [c.message for c in right if not c.passed]


def test_torchs_quantization_fails_the_allowed_operations_checks(zygote: SandboxRunner) -> None:
    """Right results, through quantized tensors and the int8 kernel: the rule checks fail,
    naming the calls both from the source and from what torch recorded."""
    verdict = grade(zygote, "int8_cheat_library.py")
    assert verdict.status == "failed"
    checks = passed(verdict)
    assert all(checks[f"{f}: correct results"] for f in FUNCTIONS)
    assert checks["weight_scales: allowed operations only"]
    what = "torch's own quantization"
    text = failing(verdict, "quantize: allowed operations only")
    assert f"quantize_per_channel is {what}" in text and f"int_repr is {what}" in text
    assert "torch recorded" in text
    text = failing(verdict, "int8_linear: allowed operations only")
    assert f"_weight_int8pack_mm is {what}" in text and "torch recorded" in text


# -- the bytes a decode step reads --------------------------------------------------------


def test_the_note_states_the_bytes_from_llama2_7b_config() -> None:
    block = 4 * HIDDEN * HIDDEN + 3 * HIDDEN * INTERMEDIATE
    weights = LAYERS * block + VOCAB * HIDDEN
    rows = LAYERS * (4 * HIDDEN + 2 * INTERMEDIATE + HIDDEN) + VOCAB
    assert weights == 6_607_077_376 and rows == 1_391_872
    bf16, int8 = 2 * weights, weights + 4 * rows
    plan = Int8Weights().plan(11, "cpu")
    grader, module = Int8Weights(), load((SOLUTIONS / "int8_correct.py").read_text())
    verdict = grader.judge(TASK, plan, run_plan(module, plan), "")
    (note,) = verdict.notes
    assert f"{bf16 / 1e9:.2f} GB in bf16" == "13.21 GB in bf16"
    assert "13.21 GB in bf16" in note
    assert f"{int8 / 1e9:.2f} GB in int8 with scales" in note
    assert f"{(bf16 - int8) / 1e9:.2f} GB less" in note
    assert f"from {H100_BANDWIDTH / bf16:.0f} to {H100_BANDWIDTH / int8:.0f} tokens/s" in note
    layers = [c.args[1].shape for c in plan.expected["cases"] if c.function == "int8_linear"]
    out, n = max(layers, key=lambda s: s[0] * s[1])
    assert f"q ({out}, {n}), reads {4 * out * n:,} bytes of float32 weights" in note
    assert f"{2 * out * n:,} in bf16 and {out * n + 4 * out:,} as int8" in note


def test_a_job_that_did_not_run_gets_no_note() -> None:
    plan = Int8Weights().plan(1, "cpu")
    result = SandboxResult("timeout", "time limit 10 s exceeded", wall_s=10.0)
    verdict = Int8Weights().judge(TASK, plan, result, "")
    assert verdict.status == "failed" and verdict.notes == ()


def test_the_reference_file_is_what_the_catalogue_builds_on() -> None:
    module = load_solution(SOLUTIONS / "int8_correct.py")
    for case in plans(range(10)):
        assert compare_tensor(case, getattr(module, case.function)(*case.args)).ok, case.label
