"""roofline: the quiz answers recomputed from the stated device numbers, and the fused
GELU grader, graded for real through the sandbox on this (CPU) host and, with fake
timing samples, on a pretend GPU host."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

import graders.fused_pointwise as fp
from bot.content import BuildTask, Content, answer_matches
from bot.content.quiz_grading import grade_quiz
from bot.grading.service import SandboxRunner
from bot.sandbox.api import CallResult, SandboxResult
from graders import load_grader
from graders.base import Plan, Verdict
from graders.tensors import to_raw
from tests.graders.support import assert_quiz_passes, grade_in_sandbox, quiz_task

TASK = "roofline/fused-gelu"
QUIZ = "roofline/roofline-numbers"
SOLUTIONS = Path(__file__).parent / "solutions" / "roofline"
BANDWIDTH = "fused_gelu_bias: memory bandwidth"
CORRECT = "fused_gelu_bias: correct results"
ALLOWED = "fused_gelu_bias: allowed operations only"

# the devices as the quiz states them
H100_FLOPS, H100_BYTES = 989e12, 3.35e12
A100_FLOPS, A100_BYTES = 312e12, 1.555e12


def attainable(intensity: float, flops: float = H100_FLOPS, bandwidth: float = H100_BYTES) -> float:
    return min(flops, intensity * bandwidth)


def matmul_intensity(n: int, bytes_per: int = 2) -> float:
    return 2 * n**3 / (3 * bytes_per * n * n)


def quiz_values() -> dict[str, float]:
    """Every numeric answer, from the numbers the prompt states."""
    add = 1 / (3 * 4)  # one FLOP per element; read x and y, write z, 4 bytes each
    n = 8192
    matvec = 2 * n * n / (2 * (n * n + n + n))  # read W and x, write y, bf16
    return {
        "ridge-point": H100_FLOPS / H100_BYTES,
        "add-intensity": add,
        "add-attainable": attainable(add) / 1e12,
        "matmul-intensity": matmul_intensity(4096),
        "small-matmul-attainable": attainable(matmul_intensity(128)) / 1e12,
        "matvec-intensity": matvec,
        "a100-ridge": A100_FLOPS / A100_BYTES,
    }


def test_every_numeric_answer_is_the_computed_value(content: Content) -> None:
    values = quiz_values()
    task = quiz_task(content, QUIZ)
    numeric = {q.id: q for q in task.questions if q.tolerance is not None}
    assert set(numeric) == set(values)
    for qid, value in values.items():
        question = numeric[qid]
        assert math.isclose(question.numeric_answers()[0], value, rel_tol=1e-3), qid
        assert answer_matches(f"{value:.6g}", question), qid
    # the rates are asked in TFLOP/s but a rate in FLOP/s is accepted too
    assert answer_matches(f"{values['add-attainable'] * 1e12:.4g}", numeric["add-attainable"])
    assert math.isclose(attainable(matmul_intensity(4096)), H100_FLOPS)  # above the ridge


def test_right_answers_pass_and_typical_mistakes_fail(content: Content) -> None:
    task = quiz_task(content, QUIZ)
    answers = {qid: f"{v:.5g}" for qid, v in quiz_values().items()}
    answers["matmul-bound"] = "compute-bound"
    assert_quiz_passes(QUIZ, task, answers)
    mistakes = {
        "add-intensity": str(1 / 8),  # forgot to count writing z
        "matmul-intensity": str(matmul_intensity(4096, bytes_per=4)),  # fp32 bytes
        "small-matmul-attainable": "989",  # assumed every matmul is compute-bound
        "matvec-intensity": "2",  # counted FLOPs per element, not per byte
        "matmul-bound": "memory bandwidth",
        "ridge-point": str(3.35e12 / 989e12),  # upside down
    }
    wrong = grade_quiz(QUIZ, task, {**answers, **mistakes})
    failed = {c.name for c in wrong.checks if not c.passed}
    assert failed == set(mistakes)


def test_the_quest_names_this_grader_and_its_interface(content: Content) -> None:
    task = content.find_task(TASK)[1]
    assert isinstance(task, BuildTask)
    grader = load_grader(task.grader)
    assert isinstance(grader, fp.FusedPointwise)
    assert task.function_names() == grader.interface == ("fused_gelu_bias",)
    assert grader.needs_cuda  # asks for a GPU where there is one, to measure bandwidth
    assert "0.044715" in task.prompt and "50%" in task.prompt


def grade(zygote: SandboxRunner, name: str, device: str = "cpu") -> tuple[Verdict, SandboxResult]:
    return grade_in_sandbox(zygote, fp.FusedPointwise(), TASK, SOLUTIONS / name, device)


def checks(verdict: Verdict) -> dict[str, str]:
    return {c.name: c.message for c in verdict.checks}


@pytest.mark.parametrize("name", ["correct.py", "correct_sigmoid.py", "correct_compiled.py"])
def test_correct_submissions_pass_with_a_cpu_note(zygote: SandboxRunner, name: str) -> None:
    verdict, _ = grade(zygote, name)
    assert verdict.status == "passed", verdict.checks
    assert set(checks(verdict)) == {CORRECT, ALLOWED}  # no pretend bandwidth check on a CPU
    assert verdict.notes == (fp.CPU_NOTE,)
    assert "bandwidth not measured" in fp.CPU_NOTE and "CPU host" in fp.CPU_NOTE


@pytest.mark.parametrize(
    ("name", "expected", "cause"),
    [
        ("wrong_erf.py", "float32 grid: ", "exact (erf) GELU"),  # bf16 cannot tell them apart
        ("wrong_bias_after.py", "entries wrong", "you added the bias after the activation"),
        ("wrong_dtype.py", "expected dtype bfloat16, got float32", "cast the result back"),
    ],
)
def test_wrong_submissions_fail_and_say_why(
    zygote: SandboxRunner, name: str, expected: str, cause: str
) -> None:
    verdict, _ = grade(zygote, name)
    assert verdict.status == "failed"
    message = checks(verdict)[CORRECT]
    assert expected in message
    assert "Likely cause: " in message and cause in message.split("Likely cause: ")[1]


def test_the_prompt_states_the_accuracy_the_grader_checks(content: Content) -> None:
    task = content.find_task(TASK)[1]
    assert isinstance(task, BuildTask)
    stated = {
        torch.float32: ("`1e-4 × |ref| + 1e-5`", (1e-4, 1e-5)),
        torch.bfloat16: ("`3e-2 × |ref| + 2e-2`", (3e-2, 2e-2)),
    }
    assert set(fp.TOLERANCE) == set(stated)
    for case in fp.FusedPointwise().plan(5, "cpu").expected["cases"]:
        text, tolerance = stated[case.expected.dtype]
        assert text in task.prompt and (case.rtol, case.atol) == tolerance
    shape = "×".join(map(str, fp.TIMED_SHAPE))
    assert f"times a {shape} float32 call" in task.prompt and math.prod(fp.TIMED_SHAPE) == 2**24


def test_the_built_in_gelu_is_not_allowed(zygote: SandboxRunner) -> None:
    verdict, _ = grade(zygote, "cheat_builtin.py")
    assert verdict.status == "failed"
    found = checks(verdict)
    assert "gelu is a built-in GELU" in found[ALLOWED]
    assert "torch recorded torch.nn.functional.gelu" in found[ALLOWED]


# --- the GPU path, judged from fake results: timing samples are data like any other ---

SMALL_TIMED = (4, 16, 256)  # stands in for 64x256x1024 so the fake results stay cheap
REAL_TIMED = fp.TIMED_SHAPE


@pytest.fixture
def gpu_plan(monkeypatch: pytest.MonkeyPatch) -> Plan:
    monkeypatch.setattr(fp, "TIMED_SHAPE", SMALL_TIMED)
    monkeypatch.setattr(fp, "device_name", lambda: "NVIDIA H100 80GB HBM3")
    return fp.FusedPointwise().plan(7, "cuda")


def timed_case(plan: Plan) -> fp.Case:
    (case,) = [c for c in plan.expected["cases"] if c.timed_runs]
    return case


def fake_gpu_result(
    plan: Plan, samples: tuple[float, ...], wrong_timed: bool = False
) -> SandboxResult:
    """Every call returns the right answer (or a wrong one for the timed call)."""
    calls = []
    for call, case in zip(plan.calls, plan.expected["cases"], strict=True):
        value = case.expected + 1 if wrong_timed and case.timed_runs else case.expected
        result = CallResult(call.function, call.label, "ok", "torch.Tensor", to_raw(value))
        if case.timed_runs:
            result = dataclasses.replace(result, samples_s=samples)
        calls.append(result)
    return SandboxResult("ok", "", tuple(calls), wall_s=0.5, device="cuda")


def samples_at(plan: Plan, fraction: float, peak: float = 3.35e12) -> tuple[float, ...]:
    """Timing samples whose median gives ``fraction`` of ``peak``, with noisy outliers."""
    median = fp.bytes_moved(timed_case(plan)) / (fraction * peak)
    return (median * 0.9, median, median * 5, median, median * 1.1)


def judge(plan: Plan, result: SandboxResult) -> Verdict:
    return fp.FusedPointwise().judge(TASK, plan, result, "def fused_gelu_bias(x, bias): ...")


def test_a_gpu_plan_adds_one_large_timed_case(gpu_plan: Plan) -> None:
    case = timed_case(gpu_plan)
    assert case.timed_runs == fp.TIMED_RUNS == 10
    assert tuple(case.args[0].shape) == SMALL_TIMED and case.args[0].dtype == torch.float32
    assert math.prod(REAL_TIMED) == 2**24  # the real one: 64 MiB each way
    assert not any(c.timed_runs for c in fp.FusedPointwise().plan(7, "cpu").expected["cases"])
    bytes_per_element = 4 + 4  # read x, write the output; the bias is one row
    assert fp.bytes_moved(case) == math.prod(SMALL_TIMED) * bytes_per_element + 4 * 256


def test_a_slip_is_named_on_a_gpu_plan_too(gpu_plan: Plan) -> None:
    """The timed case carries the slips' outputs like the small ones, so a wrong GPU
    submission still gets its likely cause, and they cost a block, not a full tensor."""
    calls = []
    for call, case in zip(gpu_plan.calls, gpu_plan.expected["cases"], strict=True):
        x, bias = case.args
        h = x.double() + bias.double()
        erf = (0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))).to(x.dtype)
        calls.append(CallResult(call.function, call.label, "ok", "torch.Tensor", to_raw(erf)))
    verdict = judge(gpu_plan, SandboxResult("ok", "", tuple(calls), wall_s=0.5, device="cuda"))
    timed = [r for r, c in zip(calls, gpu_plan.expected["cases"], strict=True) if c.timed_runs]
    assert not fp.compare(timed_case(gpu_plan), timed[0]).ok  # the timed case fails too
    assert "Likely cause: this is the exact (erf) GELU" in checks(verdict)[CORRECT]
    held = [m.output.untyped_storage().nbytes() for m in timed_case(gpu_plan).mistakes]
    assert held and max(held) * SMALL_TIMED[0] == math.prod(SMALL_TIMED) * 4  # one batch row


def test_fast_enough_passes_and_says_how_fast(gpu_plan: Plan) -> None:
    verdict = judge(gpu_plan, fake_gpu_result(gpu_plan, samples_at(gpu_plan, 0.8)))
    assert verdict.status == "passed", verdict.checks
    assert checks(verdict)[BANDWIDTH] == (
        "achieved 2680 GB/s, 80% of the H100 SXM's 3350 GB/s peak (pass mark 50%)"
    )
    assert verdict.notes == ()


def test_eager_speed_fails_only_the_bandwidth_check(gpu_plan: Plan) -> None:
    verdict = judge(gpu_plan, fake_gpu_result(gpu_plan, samples_at(gpu_plan, 0.12)))
    assert verdict.status == "failed"
    found = {c.name: c for c in verdict.checks}
    assert found[CORRECT].passed and found[ALLOWED].passed
    assert not found[BANDWIDTH].passed
    assert "achieved 402 GB/s, 12% of the H100 SXM's 3350 GB/s peak" in found[BANDWIDTH].message
    assert "the pass mark is 50%" in found[BANDWIDTH].message
    assert "torch.compile" in found[BANDWIDTH].message


def test_impossible_timings_are_not_believed(gpu_plan: Plan) -> None:
    verdict = judge(gpu_plan, fake_gpu_result(gpu_plan, samples_at(gpu_plan, 3.0)))
    assert verdict.status == "failed"
    assert "faster than the memory can go" in checks(verdict)[BANDWIDTH]


def test_samples_never_rescue_a_wrong_answer(gpu_plan: Plan) -> None:
    result = fake_gpu_result(gpu_plan, samples_at(gpu_plan, 0.9), wrong_timed=True)
    verdict = judge(gpu_plan, result)
    found = {c.name: c for c in verdict.checks}
    assert not found[CORRECT].passed and fp.TIMED_LABEL in found[CORRECT].message
    assert not found[BANDWIDTH].passed
    assert "must be correct first" in found[BANDWIDTH].message


@pytest.mark.parametrize("samples", [(), (0.0, 0.0, 0.0), (float("nan"),)])
def test_missing_or_broken_samples_fail_the_bandwidth_check(
    gpu_plan: Plan, samples: tuple[float, ...]
) -> None:
    verdict = judge(gpu_plan, fake_gpu_result(gpu_plan, samples))
    assert "no usable timing samples" in checks(verdict)[BANDWIDTH]


def test_an_unknown_gpu_gets_the_number_in_a_note_not_a_check(
    gpu_plan: Plan, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fp, "device_name", lambda: "NVIDIA Mystery GPU")
    verdict = judge(gpu_plan, fake_gpu_result(gpu_plan, samples_at(gpu_plan, 0.5)))
    assert verdict.status == "passed"
    assert BANDWIDTH not in checks(verdict)
    (note,) = verdict.notes
    assert "no datasheet peak is on file for 'NVIDIA Mystery GPU'" in note
    assert "achieved 1675 GB/s" in note


@pytest.mark.parametrize(
    ("name", "label", "peak"),
    [
        ("NVIDIA H200", "H200", 4.8e12),
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 3.35e12),
        ("NVIDIA H100 PCIe", "H100 PCIe", 2.0e12),
        ("NVIDIA H100 NVL", "H100 NVL", 3.9e12),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB", 1.555e12),
        ("NVIDIA A100-PCIE-40GB", "A100 40GB", 1.555e12),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 2.039e12),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe", 1.935e12),
        ("NVIDIA L4", "L4", 3.0e11),
        ("NVIDIA A10", "A10", 6.0e11),
        ("NVIDIA A10G", "A10", 6.0e11),
        ("Tesla T4", "T4", 3.2e11),
        ("NVIDIA GeForce RTX 4090", "RTX 4090", 1.008e12),
    ],
)
def test_peak_table_lookup(name: str, label: str, peak: float) -> None:
    assert fp.peak_for(name) == (label, peak)


@pytest.mark.parametrize(
    "name", ["NVIDIA L40S", "NVIDIA GeForce RTX 3090", "NVIDIA H100", "NVIDIA A100", "cpu"]
)
def test_names_not_in_the_table_get_no_peak(name: str) -> None:
    assert fp.peak_for(name) is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_real_gpu_fusion_passes_and_eager_does_not(zygote: SandboxRunner) -> None:
    """End to end on a GPU host: the compiled chain reaches the pass mark, eager falls short."""
    if fp.peak_for(fp.device_name()) is None:
        pytest.skip(f"{fp.device_name()} has no datasheet peak in the table")
    compiled, result = grade(zygote, "correct_compiled.py", device="cuda")
    assert result.device == "cuda"
    assert compiled.status == "passed", compiled.checks
    assert "GB/s" in checks(compiled)[BANDWIDTH]
    eager, _ = grade(zygote, "correct.py", device="cuda")
    found = {c.name: c for c in eager.checks}
    assert found[CORRECT].passed and not found[BANDWIDTH].passed
