"""roofline: the quiz answers recomputed from the stated device numbers, and the fused
GELU grader, graded for real through the sandbox on this (CPU) host, and the roofline
reading that the speed trial's bandwidth check gives."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

import graders.speed
import graders.tasks.fused_pointwise as fp
from bot.content import BuildTask, Content, answer_matches
from bot.content.quiz_grading import grade_quiz
from bot.jobs.capabilities import Requirements
from bot.jobs.job_spec import JobSpec, SpeedSpec
from bot.worker.grade_job import SandboxRunner, gpu_name, grade_prepared
from graders.base import BatchedRun, Check, HostPeak, SpeedResult, TrialOutcome, Verdict
from graders.registry import load_grader
from graders.roofline import GPU_FRACTION, bandwidth_check, gpu_peak, peak_for
from graders.tasks.stable_softmax import StableSoftmax
from sandbox.api import SandboxResult
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
def test_correct_submissions_pass(zygote: SandboxRunner, name: str) -> None:
    verdict, _ = grade(zygote, name)
    assert verdict.status == "passed", verdict.checks
    assert set(checks(verdict)) == {CORRECT, ALLOWED}  # speed is the trial's, not the grader's
    assert verdict.notes == ()


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
    assert task.speed is not None and task.speed.reference == "gelu_bias_eager"
    timed = graders.speed.load("gelu_bias_eager").inputs(torch.Generator().manual_seed(0))
    prose = " ".join(task.prompt.split())
    assert "on a 1024×1024 float32 `x`" in prose and timed[0].shape == (1024, 1024)
    assert f"{GPU_FRACTION:.0%} of the GPU's datasheet peak" in prose
    assert "On a CPU host the verdict reports your bandwidth" in prose


def test_the_built_in_gelu_is_not_allowed(zygote: SandboxRunner) -> None:
    verdict, _ = grade(zygote, "cheat_builtin.py")
    assert verdict.status == "failed"
    found = checks(verdict)
    assert "gelu is a built-in GELU" in found[ALLOWED]
    assert "torch recorded torch.nn.functional.gelu" in found[ALLOWED]


# --- the roofline reading: a pure judgement of a trusted trial's figure (graders.roofline) ---


def reading(achieved: float | None) -> Check:
    return bandwidth_check("fused_gelu_bias", achieved, 3350.0, "the H100 SXM's datasheet")


def test_fast_enough_passes_and_names_the_bottleneck() -> None:
    check = reading(2680.0)
    assert check.passed and check.name == BANDWIDTH
    assert check.message == (
        "2680.0 GB/s of the H100 SXM's datasheet 3350.0 GB/s: memory-bandwidth bound, "
        "80% of peak (pass mark 50%)"
    )


def test_eager_speed_fails_and_says_what_to_do() -> None:
    check = reading(402.0)
    assert not check.passed
    assert "12% of peak, so arithmetic or per-op overhead bounds it" in check.message
    assert "the pass mark is 50%" in check.message and "torch.compile" in check.message


def test_impossible_or_unusable_readings_are_not_believed() -> None:
    assert "faster than the memory can go" in reading(3350.0 * 3).message
    assert not reading(3350.0 * 3).passed
    unusable = reading(None)
    assert not unusable.passed
    assert unusable.message == "no bandwidth could be worked out from this trial; grade again"


@pytest.mark.parametrize(
    ("name", "label", "peak", "fp32"),
    [
        ("NVIDIA H200", "H200", 4.8e12, 67e12),
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 3.35e12, 67e12),
        ("NVIDIA H100 PCIe", "H100 PCIe", 2.0e12, 51e12),
        ("NVIDIA H100 NVL", "H100 NVL", 3.9e12, 60e12),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB", 1.555e12, 19.5e12),
        ("NVIDIA A100-PCIE-40GB", "A100 40GB", 1.555e12, 19.5e12),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 2.039e12, 19.5e12),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe", 1.935e12, 19.5e12),
        ("NVIDIA L4", "L4", 3.0e11, 30.3e12),
        ("NVIDIA A10", "A10", 6.0e11, 31.2e12),
        ("NVIDIA A10G", "A10", 6.0e11, 31.2e12),
        ("Tesla T4", "T4", 3.2e11, 8.1e12),
        ("NVIDIA GeForce RTX 4090", "RTX 4090", 1.008e12, 82.6e12),
    ],
)
def test_peak_table_lookup(name: str, label: str, peak: float, fp32: float) -> None:
    """Each GPU's datasheet: HBM/GDDR bandwidth and float32 without tensor cores."""
    found = peak_for(name)
    assert found is not None
    assert (found.label, found.bytes_per_s, found.flops_per_s) == (label, peak, fp32)
    assert gpu_peak(name) == HostPeak(
        "cuda", name, peak / 1e9, f"the {label}'s datasheet", fp32 / 1e9
    )


@pytest.mark.parametrize(
    "name", ["NVIDIA L40S", "NVIDIA GeForce RTX 3090", "NVIDIA H100", "NVIDIA A100", "cpu"]
)
def test_names_not_in_the_table_get_no_peak(name: str) -> None:
    assert peak_for(name) is None


def test_on_this_cpu_the_trial_places_the_call_under_the_measured_roofs(
    zygote: SandboxRunner,
) -> None:
    """On a CPU host the trial's figures are set against the roofs this process measured,
    carried on the result and named in a sentence; correctness alone decides the verdict."""
    verdict = grade_with_speed(zygote, "fused_inplace.py", "cpu")
    speed = verdict.speed
    assert verdict.status == "passed" and BANDWIDTH not in checks(verdict)
    assert speed is not None and speed.peak_gbs is not None and speed.peak_gflops is not None
    assert speed.achieved_gbs is not None and speed.reference_gbs is not None
    # the prompt's 1024×1024 float32 x read and written, its 1024 biases read; the six FLOPs
    # per element no tanh GELU of x + bias can do without (the bias, h², h³, the inner sum,
    # the tanh, the product)
    moved = 2 * 1024 * 1024 * 4 + 1024 * 4
    assert (speed.moved_bytes, speed.flops) == (moved, 6 * 1024 * 1024)
    # the figure comes from the fastest call, no slower than the median one
    assert speed.achieved_gbs >= moved / speed.learner_s / 1e9 * (1 - 1e-9)
    assert speed.achieved_gflops == pytest.approx(
        speed.achieved_gbs * speed.flops / moved, rel=1e-9
    )
    assert speed.bound is not None
    assert any(n.startswith("Speed: ") and "× the reference on" in n for n in verdict.notes)
    assert not any(n.startswith("Roofline: ") for n in verdict.notes)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_real_gpu_fusion_passes_and_eager_does_not(zygote: SandboxRunner) -> None:
    """End to end on a GPU host, through the speed trial: the compiled chain reaches the
    pass mark, eager falls short."""
    if peak_for(gpu_name()) is None:
        pytest.skip(f"{gpu_name()} has no datasheet peak in the table")
    compiled = grade_with_speed(zygote, "correct_compiled.py", "cuda")
    assert compiled.status == "passed", compiled.checks
    assert compiled.speed is not None and "GB/s" in checks(compiled)[BANDWIDTH]
    eager = {c.name: c for c in grade_with_speed(zygote, "correct.py", "cuda").checks}
    assert eager[CORRECT].passed and not eager[BANDWIDTH].passed


def grade_with_speed(zygote: SandboxRunner, name: str, device: str) -> Verdict:
    spec = JobSpec(
        task_ref=TASK,
        grader="fused_pointwise",
        interface=("fused_gelu_bias",),
        requirements=Requirements(),
        limits=fp.FusedPointwise.limits,
        prefers_cuda=device == "cuda",
        filename=name,
        source=(SOLUTIONS / name).read_text(),
        speed=SpeedSpec("fused_gelu_bias", "gelu_bias_eager"),
    )
    return grade_prepared(spec, zygote, allow_cuda=device == "cuda")


# --- the speed part of the verdict: the grader's, from the trial the worker hands it ---

H100 = HostPeak("cuda", "NVIDIA H100 80GB HBM3", 3350.0, "the H100 SXM's datasheet")
CPU = HostPeak("cpu", "AMD EPYC 9654", 18.2, "a measured")


def passing() -> Verdict:
    """What the grader's ``judge`` gives a correct file, before the trial."""
    checks = (Check(CORRECT, True, "all 13 cases correct"), Check(ALLOWED, True, "uses none"))
    return Verdict(TASK, "passed", 1.0, checks, fp.FusedPointwise.passed_feedback)


def trial(achieved: float | None, device: str = "NVIDIA H100 80GB HBM3") -> TrialOutcome:
    result = SpeedResult(1.84, 0.002, 0.0037, 0.1, 50, device, achieved, None, 1.6, 2, 1.7)
    return TrialOutcome(result)


SPEED_NOTE = (
    "Speed: 1.8× the reference on NVIDIA H100 80GB HBM3 (median of 50 pairs, spread ±5%), "
    "timed by the worker on fresh inputs."
)


def test_on_a_gpu_the_bandwidth_check_joins_the_verdict_and_can_fail_it() -> None:
    grader = fp.FusedPointwise()
    fast = grader.judge_speed(passing(), trial(2680.0), H100)
    assert (fast.status, fast.score, fast.feedback) == ("passed", 1.0, passing().feedback)
    assert fast.checks[:2] == passing().checks and fast.checks[2].name == BANDWIDTH
    assert fast.checks[2].passed and fast.notes == (SPEED_NOTE,)
    assert fast.speed == dataclasses.replace(trial(2680.0).result, peak_gbs=3350.0)

    slow = grader.judge_speed(passing(), trial(402.0), H100)
    assert (slow.status, slow.score) == ("failed", 2 / 3)
    assert slow.feedback == f"2 of 3 checks passed. Start with “{BANDWIDTH}” below."
    assert not slow.checks[2].passed and "12% of peak" in slow.checks[2].message
    assert slow.speed is not None and slow.speed.ratio == 1.84  # still ranked: speed is apart


def test_a_gpu_with_no_datasheet_peak_is_not_judged_and_still_passes() -> None:
    unknown = HostPeak("cuda", "NVIDIA L40S", None)
    verdict = fp.FusedPointwise().judge_speed(passing(), trial(512.4, "NVIDIA L40S"), unknown)
    assert (verdict.status, verdict.score) == ("passed", 2 / 3)
    assert verdict.feedback == passing().feedback
    assert verdict.checks[2] == Check(
        BANDWIDTH,
        False,
        "not judged: no datasheet peak is on file for NVIDIA L40S; achieved 512 GB/s",
        checked=False,
    )
    assert verdict.speed is not None and verdict.speed.peak_gbs is None


def test_a_trial_with_no_result_says_why_and_fails_the_gpu_check() -> None:
    reason = "too slow to rank: a timed run took over 74 ms"
    verdict = fp.FusedPointwise().judge_speed(passing(), TrialOutcome(None, reason), H100)
    assert verdict.status == "failed" and verdict.speed is None
    assert verdict.checks[2] == Check(BANDWIDTH, False, f"not measured: {reason}")
    assert verdict.notes == (f"Speed not ranked: {reason}.",)


def test_a_trial_that_failed_on_our_side_makes_an_error_verdict() -> None:
    failed = TrialOutcome(None, "the reference took over 5.0 s", our_fault=True)
    assert fp.FusedPointwise().judge_speed(passing(), failed, H100) == Verdict.internal_error(
        TASK, "the speed trial could not run on our side: the reference took over 5.0 s"
    )


def test_on_a_cpu_host_nothing_is_judged_of_the_bandwidth() -> None:
    verdict = fp.FusedPointwise().judge_speed(passing(), trial(1.9, "AMD EPYC 9654"), CPU)
    assert (verdict.status, verdict.score, verdict.checks) == ("passed", 1.0, passing().checks)
    (speed,) = verdict.notes  # a result without roofline figures gets no bound sentence
    assert speed.startswith("Speed: 1.8× the reference on AMD EPYC 9654 (median of 50 pairs")
    assert verdict.speed is not None and verdict.speed.peak_gbs == 18.2


@pytest.mark.parametrize("peak", [H100, CPU], ids=["gpu", "cpu"])
def test_a_task_whose_lesson_is_not_bandwidth_says_nothing_of_it(peak: HostPeak) -> None:
    """stable-softmax is speed-ranked too: its result carries the figures, its verdict
    neither checks nor mentions them."""
    softmax = StableSoftmax()
    before = Verdict("transformer-internals/stable-softmax", "passed", 1.0, passing().checks, "ok")
    verdict = softmax.judge_speed(before, trial(402.0, peak.name), peak)
    assert (verdict.status, verdict.score, verdict.checks, verdict.feedback) == (
        "passed",
        1.0,
        before.checks,
        "ok",
    )
    assert len(verdict.notes) == 1 and verdict.notes[0].startswith("Speed: 1.8× the reference")
    assert verdict.speed is not None and verdict.speed.peak_gbs == peak.gbs


def test_a_batch_trial_says_what_batching_bought_or_why_it_could_not() -> None:
    """One call's median 2 ms, sixteen at once 2.8 ms: 1.4× the time, 16 / 1.4 = 11.4× the
    throughput; a batch trial that failed says why, and neither changes the score."""
    one = trial(402.0, CPU.name)
    assert one.result is not None
    sixteen = dataclasses.replace(one.result, learner_s=0.0028)
    ran = dataclasses.replace(one, batched=BatchedRun(16, sixteen))
    verdict = StableSoftmax().judge_speed(passing(), ran, CPU)
    assert "Batching: 16 at once cost 1.4× one: 11.4× the throughput." in verdict.notes
    cut = dataclasses.replace(one, batched=BatchedRun(16, None, "too slow to rank: x"))
    verdict = StableSoftmax().judge_speed(passing(), cut, CPU)
    assert "Batching not measured: too slow to rank: x." in verdict.notes
    assert (verdict.status, verdict.score) == ("passed", 1.0)


def test_the_pass_mark_and_the_plausible_ceiling_are_inclusive() -> None:
    """Exactly half the peak passes and is called bandwidth bound; exactly 1.05× the peak is
    still believed, a hair more is not."""
    half = reading(1675.0)  # 1675 / 3350 = 0.5 exactly
    assert half.passed and half.message == (
        "1675.0 GB/s of the H100 SXM's datasheet 3350.0 GB/s: memory-bandwidth bound, "
        "50% of peak (pass mark 50%)"
    )
    assert reading(3517.5).passed  # 3517.5 / 3350 = 1.05 exactly
    assert "faster than the memory can go" in reading(3517.6).message
