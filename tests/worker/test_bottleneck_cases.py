"""The bound rules on the known cases, measured on this machine through the real trial, the
real profile in the sandbox and this worker's measured roofs: a Python loop is overhead-bound,
a matmul compute-bound, and the GELU chain, eager or fused in place, sits below both roofs on
one CPU core with its dominant operator named (tanh's throughput is neither memory bandwidth
nor the matmul FLOP rate).  Each case's picture is drawn and checked to be the one its numbers
give; the paths are printed (``pytest -s``).

The rules themselves, at their boundaries, are in ``tests/graders/test_bottleneck.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import bot.worker.grade_job as grade_job
import graders.speed
from bot.jobs.capabilities import Requirements
from bot.jobs.job_spec import JobSpec, SpeedSpec
from bot.presentation.roofline_charts import roofline_chart
from bot.presentation.roofline_image import roofline_png
from bot.worker.grade_job import host_peak, roof_of
from bot.worker.op_profile import profile_function
from bot.worker.speed_trial import run_trial
from graders.base import Bound, HostPeak, OpProfile, SpeedResult, TrialOutcome
from graders.bottleneck import Naming, RooflineFigures, name_bound
from graders.registry import registry
from sandbox import Zygote
from tests.worker.bottleneck_cases import matmul_square

SOLUTIONS = Path(__file__).parents[1] / "graders" / "solutions" / "roofline"
#: enough pairs for a steady fastest call; the rules read the fastest call and the profile
PAIRS = 20

LOOP = """import torch


def cumsum(a):
    out = a.clone()
    for i in range(1, a.shape[0]):
        out[i] += out[i - 1]
    return out
"""
MATMUL = "import torch\n\n\ndef matmul(a, b):\n    return torch.matmul(a, b)\n"
#: the operators of the GELU chain, in place or not: one of them dominates its profile
CHAIN_OPS = {"aten::add", "aten::add_", "aten::mul", "aten::mul_", "aten::tanh", "aten::tanh_"}
CHAIN_OPS |= {"aten::pow", "aten::pow_"}


@dataclass(frozen=True)
class Measured:
    result: SpeedResult
    profile: OpProfile
    naming: Naming
    picture: Path


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    with Zygote() as running:
        running.partner().start()
        yield running


@pytest.fixture(scope="module")
def peak() -> HostPeak:
    return host_peak("cpu")


@pytest.fixture(scope="module")
def pictures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("roofline-cases")


def measure(
    zygote: Zygote,
    peak: HostPeak,
    pictures: Path,
    name: str,
    source: str,
    speed: SpeedSpec,
    grader: str,
) -> Measured:
    limits = registry()[grader].limits
    trial = run_trial(
        speed, source, f"{name}.py", zygote, limits, roof=roof_of("cpu", peak), pairs=PAIRS
    )
    assert trial.result is not None, trial.reason
    profile, problem = profile_function(
        speed, source, f"{name}.py", zygote, limits, "cpu", wall_s=20.0
    )
    assert profile is not None, problem
    naming = name_bound(trial.result, profile, peak)
    placed = RooflineFigures.of(
        dataclasses.replace(trial.result, peak_gbs=peak.gbs, peak_gflops=peak.gflops)
    )
    assert placed is not None
    picture = pictures / f"{name}.png"
    picture.write_bytes(roofline_png(roofline_chart(placed, name, peak.name)))
    print(f"\n{name}: {naming.sentence}\n  picture: {picture}")
    return Measured(trial.result, profile, naming, picture)


def test_a_python_loop_over_the_elements_is_overhead_bound(
    zygote: Zygote, peak: HostPeak, pictures: Path
) -> None:
    """cumsum as 2047 in-place additions, against the reference's one masked sum: thousands
    of tiny operators per call, each a dispatch for one element's work."""
    case = measure(
        zygote, peak, pictures, "loop", LOOP, SpeedSpec("cumsum", "cumsum_mask"), "tensor_puzzles"
    )
    assert case.profile.operators >= 2047  # at least one add_ per element after the first
    assert case.naming.bound is Bound.OVERHEAD, case.naming.sentence
    assert case.naming.sentence.startswith(
        f"Overhead-bound: {case.profile.operators:.0f} operators"
    )


def test_a_matmul_is_compute_bound_near_the_measured_flop_peak(
    zygote: Zygote, peak: HostPeak, pictures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch.matmul on the 1024² shape the worker's compute roof was measured on."""
    monkeypatch.setattr(graders.speed, "load", lambda name: matmul_square)
    case = measure(
        zygote,
        peak,
        pictures,
        "matmul",
        MATMUL,
        SpeedSpec("matmul", "matmul_square"),
        "stable_softmax",
    )
    assert case.naming.bound is Bound.COMPUTE, case.naming.sentence
    assert peak.gflops is not None and case.result.achieved_gflops is not None
    share = case.result.achieved_gflops / peak.gflops
    assert share >= 0.5
    assert case.naming.sentence == (
        f"Compute-bound: {share:.0%} of this worker's measured {peak.gflops:.3g} GFLOP/s."
    )
    assert case.profile.top[0].name == "aten::mm"


@pytest.mark.parametrize("solution", ["correct.py", "fused_inplace.py"], ids=["eager", "fused"])
def test_the_gelu_chain_sits_below_both_roofs_and_its_dominant_operator_is_named(
    zygote: Zygote, peak: HostPeak, pictures: Path, solution: str
) -> None:
    source = (SOLUTIONS / solution).read_text()
    speed = SpeedSpec("fused_gelu_bias", "gelu_bias_eager")
    case = measure(
        zygote, peak, pictures, solution.removesuffix(".py"), source, speed, "fused_pointwise"
    )
    assert case.naming.bound is Bound.NEITHER, case.naming.sentence
    leader = case.profile.top[0]
    assert leader.name in CHAIN_OPS
    assert case.naming.sentence.startswith("Below both roofs: ")
    assert f"`{leader.name}` takes {leader.share:.0%} of the time" in case.naming.sentence
    assert case.result.achieved_gbs is not None and peak.gbs is not None
    assert case.result.achieved_gbs < peak.gbs / 2  # well under the bandwidth roof


HANGS_WHEN_PROFILED = """import time

import torch


def softmax(x):
    if torch.autograd.profiler._is_profiler_enabled:
        print("PROFILED: hanging", flush=True)
        time.sleep(3600)
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
"""


def test_a_profile_that_runs_out_of_time_leaves_the_verdict_as_it_was(
    zygote: Zygote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A function that hangs only under the profiler: its trial ranks it, its profile runs out
    of what is left of the trial's budget (3 s here), and the verdict is what it would be
    without a profile, with one line saying why."""
    speed = SpeedSpec("softmax", "softmax_rows")
    spec = JobSpec(
        task_ref="transformer-internals/stable-softmax",
        grader="stable_softmax",
        interface=("softmax",),
        requirements=Requirements(),
        limits=registry()["stable_softmax"].limits,
        prefers_cuda=False,
        filename="hangs.py",
        source=HANGS_WHEN_PROFILED,
        speed=speed,
    )
    real_trial = grade_job.run_trial

    def trial_with_budget(*args: object, **kwargs: object) -> TrialOutcome:
        outcome = real_trial(*args, **kwargs)  # type: ignore[arg-type]
        monkeypatch.setattr(grade_job, "DEADLINE_S", outcome.seconds + 3.0)
        return outcome

    monkeypatch.setattr(grade_job, "run_trial", trial_with_budget)
    profiled = grade_job.grade_prepared(spec, zygote)
    unprofiled = grade_job.grade_prepared(
        dataclasses.replace(spec, speed=dataclasses.replace(speed, profile=False)), zygote
    )
    assert profiled.status == unprofiled.status == "passed"
    assert profiled.checks == unprofiled.checks and profiled.score == unprofiled.score == 1.0
    assert profiled.speed is not None and profiled.profile is None
    assert profiled.notes[-1] == (
        "The profile could not be taken: the profiled run ended early (time limit 3 s exceeded)."
    )
    assert [n for n in unprofiled.notes if n.startswith("The profile")] == []
    assert len(profiled.notes) == len(unprofiled.notes) + 1
