"""inference-engine/kv-cache-decode: one decode step graded for real in the sandbox, its
speed reference's sizes and lower bounds counted here, the decode and batching notes on
scripted trials, and the whole path through ``brrrbot grade --profile`` on this host.

Learner code runs only inside ``sandbox``'s jobs, never in this process.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest
import torch

import graders.speed
from bot.content.schema import BuildTask
from bot.worker.grade_job import SandboxRunner
from graders.base import (
    BatchedRun,
    Check,
    HostPeak,
    OpProfile,
    OpShare,
    SpeedResult,
    TrialOutcome,
    Verdict,
)
from graders.registry import load_grader
from graders.speed import decode_step as reference_module
from graders.tasks import kv_cache_decode as kv
from graders.tasks.kv_cache_decode import KvCacheDecode, Slip
from tests.graders.in_process import load, run_plan
from tests.graders.support import failing, grade_in_sandbox, load_quest
from tests.support import SEED_QUESTS, run_cli

QUEST = "inference-engine"
TASK = f"{QUEST}/kv-cache-decode"
SOLUTIONS = Path(__file__).parent / "solutions" / QUEST
CORRECT = "decode_step: correct results"
ALLOWED = "decode_step: allowed operations only"


def grade(zygote: SandboxRunner, name: str) -> Verdict:
    verdict, _ = grade_in_sandbox(zygote, KvCacheDecode(), TASK, SOLUTIONS / name)
    return verdict


def test_the_task_names_this_grader_its_interface_and_its_trial() -> None:
    task = load_quest(QUEST).tasks[-1]
    assert isinstance(task, BuildTask) and task.id == "kv-cache-decode"
    grader = load_grader(task.grader)
    assert isinstance(grader, KvCacheDecode)
    assert task.function_names() == grader.interface == ("decode_step",)
    assert task.speed is not None
    assert (task.speed.function, task.speed.reference) == ("decode_step", "decode_step")
    assert kv.DECLARATION.speed is not None and kv.DECLARATION.speed.batch == 16


def test_the_prompt_states_the_interface_and_the_accuracy_every_case_checks() -> None:
    task = load_quest(QUEST).task("kv-cache-decode")
    prompt = " ".join(task.prompt.split())
    for said in (
        "`decode_step(x, k_cache, v_cache, pos, w_qkv, b_qkv, w_proj, b_proj, n_head)`",
        "`(B, n_head, T, head_dim)` float32 buffers",
        "hold NaN",
        "`qkv = x @ w_qkv + b_qkv`",
        "`torch.stack([y, k_new, v_new], dim=1)`",
        "within 1e-4 relative plus 1e-5 absolute of a float64 reference",
        "`F.scaled_dot_product_attention`",
        "16 sequences at once",
    ):
        assert said in prompt, said
    cases = KvCacheDecode().plan(1, "cpu").expected["cases"]
    assert {(c.rtol, c.atol) for c in cases} == {(kv.RTOL, kv.ATOL)} == {(1e-4, 1e-5)}
    assert {c.expected.dtype for c in cases} == {torch.float32}


def test_the_fixed_cases_cover_what_the_prompt_promises() -> None:
    """Nothing cached, a buffer full but for the new slot, several heads with an odd
    head_dim, more than one sequence; the cache holds the projected prefix and NaN beyond."""
    cases = KvCacheDecode().fixed_cases("cpu")
    steps = []
    for case in cases:
        x, k_cache, v_cache, pos, *_, n_head = case.args
        batch, heads, length, size = k_cache.shape
        p = int(pos)
        assert x.shape == (batch, heads * size) and int(n_head) == heads
        assert k_cache[:, :, :p].isfinite().all() and v_cache[:, :, :p].isfinite().all()
        assert k_cache[:, :, p:].isnan().all() and v_cache[:, :, p:].isnan().all()
        steps.append((batch, heads, size, p, length))
    assert any(p == 0 for *_, p, _ in steps)
    assert any(p == length - 1 for *_, p, length in steps)
    assert any(heads > 1 and size % 2 for _, heads, size, *_ in steps)
    assert any(batch > 1 for batch, *_ in steps)


def test_the_expected_step_is_full_attention_and_the_cache_is_its_prefix() -> None:
    """The trusted answer (causal attention over the whole sequence) agrees with attention
    over the cache the learner is given, and the cache is the prefix projected."""
    gen = torch.Generator().manual_seed(3)
    drawn = kv._draw(gen, kv.Step(2, 12, 3, 5, 8))
    args = tuple(a.double() if a.is_floating_point() else a for a in drawn.args())
    over_cache = Slip().output(args)
    assert torch.allclose(kv.expected_step(drawn), over_cache, rtol=1e-6, atol=1e-7)
    keys = drawn.prefix.double() @ drawn.w_qkv[:, 12:24].double() + drawn.b_qkv[12:24].double()
    cached = drawn.k_cache[:, :, :5].transpose(1, 2).reshape(2, 5, 12)
    assert torch.allclose(cached.double(), keys, rtol=1e-6, atol=1e-6)
    assert len(drawn.args()) == 9  # the prefix itself is never passed


@pytest.mark.parametrize("name", ["kv_decode_correct.py", "kv_decode_correct_in_place.py"])
def test_correct_solutions_pass(zygote: SandboxRunner, name: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "passed", [c.message for c in verdict.checks if not c.passed]
    assert verdict.score == 1.0 and {c.name for c in verdict.checks} == {CORRECT, ALLOWED}


@pytest.mark.parametrize(
    ("name", "words"),
    [
        (
            "kv_decode_wrong_tuple.py",
            "returned a tuple; stack them into one tensor as the prompt says: "
            "torch.stack([y, k_new, v_new], dim=1).",
        ),
        ("kv_decode_wrong_float64.py", "expected dtype float32, got float64."),
        ("kv_decode_wrong_shape.py", "expected shape (2, 3, 24), got (2, 24)."),
        ("kv_decode_wrong_missing.py", "decode_step is not defined at the top level of your file"),
        ("kv_decode_wrong_all_slots.py", "Likely cause: y is NaN: your attention read cache"),
        ("kv_decode_wrong_all_slots.py", "a weight of 0 times NaN is still NaN"),
    ],
)
def test_wrong_solutions_fail_and_say_why(zygote: SandboxRunner, name: str, words: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "failed" and verdict.score == 0.0
    assert words in failing(verdict, CORRECT)
    assert not verdict.checks[1].passed  # the rule counts once results are right


def test_a_returned_list_is_told_to_stack_too() -> None:
    """Our own file, changed to return a list, judged on a plan without the sandbox."""
    source = (
        (SOLUTIONS / "kv_decode_wrong_tuple.py")
        .read_text()
        .replace("return y, k, v", "return [y, k, v]")
    )
    grader = KvCacheDecode()
    plan = grader.plan(7, "cpu")
    verdict = grader.judge(TASK, plan, run_plan(load(source), plan), source)
    message = failing(verdict, CORRECT)
    assert "returned a list; stack them into one tensor as the prompt says: " in message
    assert "build and return a torch.Tensor instead" not in message


def test_the_library_attention_fails_the_allowed_operations_check(zygote: SandboxRunner) -> None:
    verdict = grade(zygote, "kv_decode_cheat.py")
    assert verdict.status == "failed" and verdict.score == 0.5  # right answers, wrong means
    message = failing(verdict, ALLOWED)
    assert "scaled_dot_product_attention is a library attention routine" in message
    assert "torch recorded" in message


# --- the speed reference: sizes, draws and lower bounds, counted here ------------------------

C, HEADS, POS, SLOTS = 768, 12, 256, 320
WEIGHTS = 4 * (C * 3 * C + 3 * C + C * C + C)  # w_qkv, b_qkv, w_proj, b_proj in float32


def test_the_reference_draws_a_gpt2_small_step_with_nan_beyond_pos() -> None:
    for batch in (1, 16):
        drawn = reference_module.inputs(torch.Generator().manual_seed(batch), batch)
        x, k_cache, v_cache, pos, w_qkv, b_qkv, w_proj, b_proj, n_head = drawn
        assert x.shape == (batch, C) and (int(pos), int(n_head)) == (POS, HEADS)
        assert k_cache.shape == v_cache.shape == (batch, HEADS, SLOTS, C // HEADS)
        assert k_cache[:, :, :POS].isfinite().all() and k_cache[:, :, POS:].isnan().all()
        assert v_cache[:, :, :POS].isfinite().all() and v_cache[:, :, POS:].isnan().all()
        assert (w_qkv.shape, b_qkv.shape, w_proj.shape, b_proj.shape) == (
            (C, 3 * C),
            (3 * C,),
            (C, C),
            (C,),
        )
        assert 0.018 < float(w_qkv.std()) < 0.022  # GPT-2's initialisation, std 0.02
        out = reference_module.reference(*drawn)
        assert out.shape == (batch, 3, C) and out.isfinite().all()
        wide = tuple(t.double() if t.is_floating_point() else t for t in drawn)
        assert torch.allclose(out.double(), Slip().output(wide), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("batch", [1, 16])
def test_the_reference_counts_the_weights_once_and_the_filled_cache(batch: int) -> None:
    drawn = reference_module.inputs(torch.Generator().manual_seed(1), batch)
    cache = 4 * 2 * batch * POS * C  # keys and values of the 256 cached tokens, not 320
    x_and_result = 4 * batch * C + 4 * batch * 3 * C
    assert reference_module.moved_bytes(*drawn) == WEIGHTS + cache + x_and_result
    assert WEIGHTS == 9_449_472 and reference_module.moved_bytes(*drawn) == (
        11_034_624 if batch == 1 else 34_811_904
    )
    projections = 2 * batch * C * 3 * C + 2 * batch * C * C
    attention = 2 * (2 * batch * (POS + 1) * C)  # scores and weighted values, 257 keys
    assert reference_module.flops(*drawn) == projections + attention


def test_the_reference_is_registered_with_a_line_on_what_it_is() -> None:
    assert "decode step" in graders.speed.REFERENCES["decode_step"]
    assert graders.speed.load("decode_step") is reference_module


# --- the speed part of the verdict, on scripted trials -----------------------------------------

MOVED = 11_034_624
CPU = HostPeak("cpu", "AMD EPYC", 25.6, "a measured", 102.0)
H200 = HostPeak("cuda", "NVIDIA H200", 4800.0, "the H200's datasheet", 67000.0)


def passing() -> Verdict:
    checks = (Check(CORRECT, True, "all 9 cases correct"), Check(ALLOWED, True, "uses none"))
    return Verdict(TASK, "passed", 1.0, checks, KvCacheDecode.passed_feedback)


def result(fastest_s: float, median_s: float, device: str = "AMD EPYC") -> SpeedResult:
    """A ranked trial whose fastest learner call took ``fastest_s``."""
    flops = 5_508_096
    return SpeedResult(
        ratio=1.2,
        learner_s=median_s,
        reference_s=median_s * 1.2,
        spread=0.1,
        pairs=50,
        device=device,
        achieved_gbs=MOVED / fastest_s / 1e9,
        instrument=2,
        board_ratio=1.1,
        moved_bytes=MOVED,
        flops=flops,
        achieved_gflops=flops / fastest_s / 1e9,
        reference_gflops=flops / fastest_s / 1e9 / 1.2,
    )


def test_the_decode_note_states_the_bytes_the_time_and_the_share_of_the_roof() -> None:
    """11,034,624 bytes in 0.5 ms: 22.07 GB/s, 86% of 25.6; the weights 9,449,472 bytes and
    one sequence's 256 cached keys and values 1,572,864."""
    note = kv.decode_note(result(0.0005, 0.0008), CPU)
    assert note == (
        "Decode step: 11.0 MB read (9.4 MB of weights, 1.6 MB of cache) in 0.50 ms: "
        "22.1 GB/s, 86% of this worker's measured 25.6 GB/s."
    )
    # 5 µs on an H200: 2,207 GB/s, 46% of its datasheet's 4,800
    assert kv.decode_note(result(5e-6, 6e-6, "NVIDIA H200"), H200) == (
        "Decode step: 11.0 MB read (9.4 MB of weights, 1.6 MB of cache) in 5.0 µs: "
        "2,207 GB/s, 46% of the H200's datasheet 4,800 GB/s."
    )
    unknown = HostPeak("cuda", "NVIDIA L40S", None)
    assert kv.decode_note(result(5e-6, 6e-6, "NVIDIA L40S"), unknown) == (
        "Decode step: 11.0 MB read (9.4 MB of weights, 1.6 MB of cache) in 5.0 µs: 2,207 GB/s."
    )
    bare = dataclasses.replace(result(0.0005, 0.0008), moved_bytes=None, achieved_gbs=None)
    assert kv.decode_note(bare, CPU) is None


def test_the_batching_note_says_the_cost_and_the_tokens_per_second() -> None:
    """One step's median 0.8 ms, sixteen sequences' 2.32 ms: 2.9× the time, 16 / 2.9 = 5.5×
    the tokens per second."""
    single = result(0.0005, 0.0008)
    sixteen = dataclasses.replace(single, learner_s=0.00232)
    grader = KvCacheDecode()
    assert grader.batching_note(single, BatchedRun(16, sixteen)) == (
        "Batching: 16 sequences per step cost 2.9× one: 5.5× the tokens/s."
    )
    cut = BatchedRun(16, None, "too slow to rank: x")
    assert grader.batching_note(single, cut) == "Batching not measured: too slow to rank: x."


PROFILE = OpProfile(operators=21.0, total_s=0.0007, top=(OpShare("aten::mm", 0.0004, 0.57, 2.0),))


def test_the_verdict_says_speed_bound_decode_batching_and_profile_in_that_order() -> None:
    single = result(0.0005, 0.0008)
    sixteen = dataclasses.replace(single, learner_s=0.00232)
    trial = TrialOutcome(single, batched=BatchedRun(16, sixteen), profile=PROFILE)
    verdict = KvCacheDecode().judge_speed(passing(), trial, CPU)
    assert (verdict.status, verdict.score) == ("passed", 1.0)
    speed, bound, decode, batching, profile = verdict.notes
    assert speed.startswith("Speed: 1.2× the reference on AMD EPYC")
    assert bound == "Memory-bound: 86% of this worker's measured 25.6 GB/s."
    assert decode.startswith("Decode step: 11.0 MB read") and decode.endswith("25.6 GB/s.")
    assert batching == "Batching: 16 sequences per step cost 2.9× one: 5.5× the tokens/s."
    assert profile.startswith("Profile (your code timing itself")
    assert verdict.speed is not None and verdict.speed.peak_gbs == 25.6

    unprofiled = dataclasses.replace(trial, profile=None, profile_problem="it hung")
    notes = KvCacheDecode().judge_speed(passing(), unprofiled, CPU).notes
    assert notes[2].startswith("Decode step: ") and notes[-1].endswith("it hung.")


def test_a_trial_without_a_result_gets_no_decode_note() -> None:
    trial = TrialOutcome(None, "too slow to rank: a timed run took over 30 ms")
    verdict = KvCacheDecode().judge_speed(passing(), trial, CPU)
    assert verdict.notes == ("Speed not ranked: too slow to rank: a timed run took over 30 ms.",)


# --- the whole path, as a learner runs it on this host -----------------------------------------


def test_grade_profile_runs_the_trial_the_batch_and_the_profile_and_draws(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_bytes((SOLUTIONS / "kv_decode_correct.py").read_bytes())
    env = {"QUESTS_DIR": str(SEED_QUESTS)}
    result = run_cli("grade", "mine.py", "--task", TASK, "--profile", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{TASK}: Passed (score 1.00")
    notes = [line.removeprefix("note: ") for line in lines if line.startswith("note: ")]
    assert notes[0].startswith("Speed: ") and "× the reference on " in notes[0]
    bounds = ("Compute-bound: ", "Memory-bound: ", "Overhead-bound: ", "Below both roofs: ")
    assert notes[1].startswith(bounds), notes
    assert re.fullmatch(
        r"Decode step: 11\.0 MB read \(9\.4 MB of weights, 1\.6 MB of cache\) in [0-9.]+ (ms|µs): "
        r"[0-9.,]+ GB/s, \d+% of this worker's measured [0-9.]+ GB/s\.",
        notes[2],
    ), notes[2]
    assert re.fullmatch(
        r"Batching: 16 sequences per step cost [0-9.]+× one: [0-9.]+× the tokens/s\.", notes[3]
    ), notes[3]
    assert notes[4].startswith("Profile (your code timing itself in its sandbox")
    assert len(notes) == 5
    # 5,508,096 FLOPs over 11,034,624 bytes: the step sits at 0.499 FLOP/byte
    assert re.fullmatch(
        r"roofline: your code [0-9.e+-]+ GFLOP/s at 0\.499 FLOP/byte, the reference's "
        r"[0-9.e+-]+; roofs [0-9.e+-]+ GB/s and [0-9.e+-]+ GFLOP/s; picture written to "
        r"mine\.roofline\.png",
        lines[-1],
    ), lines[-1]
    assert (tmp_path / "mine.roofline.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert math.isclose(5_508_096 / MOVED, 0.499, abs_tol=5e-4)
