"""Grade one job spec: the single path shared by workers and ``brrrbot grade``.

Runs in a worker process (it imports graders, hence torch).  The grader plans
the calls with a fresh seed in this trusted process, the sandbox runs them,
and the grader judges after the job process is gone.  Everything about the
task comes from the spec, so a worker grades without any quest files.

A pass of a speed-ranked task gets its speed trial here (``bot.worker.speed_trial``, the
worker's own clock) and, when the spec asks, a profile of the function in what is left of the
trial's budget (``bot.worker.op_profile``: advice); both are handed to the grader with this
host's roofs, and the grader turns them into its verdict (``Grader.judge_speed``).  A speed
result never changes XP: it rides on the verdict (``Verdict.speed``) for the boards.  The
trial's physics floor uses this host's roof: the cache-resident bandwidth and the matmul
FLOP/s it measured on a CPU, the datasheet's bandwidth on a GPU.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from contextlib import AbstractContextManager
from typing import Protocol

from bot.jobs.job_spec import JobSpec, SpeedSpec
from bot.worker import peaks
from bot.worker.op_profile import profile_function
from bot.worker.speed_trial import DEADLINE_S, Roof, run_trial
from graders.base import BatchedRun, Grader, HostPeak, Verdict
from graders.registry import load_grader
from graders.roofline import gpu_peak, measured_peak
from sandbox.api import SandboxRequest, SandboxResult
from sandbox.turn_client import Turn
from sandbox.turns import TurnSpec

#: timed pairs of a batch trial (what batching bought: reported, never ranked)
BATCH_PAIRS = 10


class SandboxRunner(Protocol):
    """What the service needs from the sandbox (``sandbox.Zygote`` provides it): jobs,
    and the turns of a speed trial."""

    def run(self, request: SandboxRequest) -> SandboxResult: ...

    def turn(
        self, spec: TurnSpec, load_timeout_s: float | None = None
    ) -> AbstractContextManager[Turn]: ...

    def partner(self) -> SandboxRunner: ...


def cuda_available() -> bool:
    """Whether this host can grade on CUDA (checked in the trusted process)."""
    import torch

    return torch.cuda.is_available()


def grade_prepared(
    spec: JobSpec,
    sandbox: SandboxRunner,
    *,
    allow_cuda: bool = True,
    seed: int | None = None,
) -> Verdict:
    """Plan, run in the sandbox, judge; the verdict carries the device used.

    KeyError when this installation has no grader ``spec.grader`` (callers check first).
    """
    started = time.perf_counter()
    grader = load_grader(spec.grader)
    # the grader may prefer a GPU; a task may insist on one (and was routed to a GPU worker)
    wants_gpu = spec.prefers_cuda or spec.requirements.needs_cuda
    device = "cuda" if allow_cuda and wants_gpu and cuda_available() else "cpu"
    plan = grader.plan(secrets.randbits(62) if seed is None else seed, device)
    request = SandboxRequest(
        source=spec.source,
        filename=spec.filename,
        calls=plan.calls,
        limits=spec.limits,
        device=device,
    )
    result = sandbox.run(request)
    verdict = grader.judge(spec.task_ref, plan, result, spec.source)
    if verdict.status == "passed" and spec.speed is not None:
        verdict = _with_trial(spec, spec.speed, grader, verdict, sandbox, device)
    return dataclasses.replace(
        verdict,
        duration_s=time.perf_counter() - started,
        device=result.device,
        notes=(*spec.notes, *verdict.notes),
    )


def _with_trial(
    spec: JobSpec,
    speed: SpeedSpec,
    grader: Grader,
    verdict: Verdict,
    sandbox: SandboxRunner,
    device: str,
) -> Verdict:
    """Run the speed trial ``spec`` asks for and hand it to the grader, which judges it."""
    peak = host_peak(device)  # on a CPU host, measured at the first call
    roof = roof_of(device, peak)
    trial = run_trial(speed, spec.source, spec.filename, sandbox, spec.limits, device, roof=roof)
    if trial.result is not None and speed.batch is not None:
        batched = run_trial(
            speed,
            spec.source,
            spec.filename,
            sandbox,
            spec.limits,
            device,
            roof=roof,
            pairs=BATCH_PAIRS,
            deadline_s=DEADLINE_S - trial.seconds,
            batch=speed.batch,
        )
        run = BatchedRun(speed.batch, batched.result, batched.reason)
        trial = dataclasses.replace(trial, seconds=trial.seconds + batched.seconds, batched=run)
    if trial.result is not None and speed.profile:
        profile, problem = profile_function(
            speed,
            spec.source,
            spec.filename,
            sandbox,
            spec.limits,
            device,
            wall_s=DEADLINE_S - trial.seconds,
        )
        trial = dataclasses.replace(trial, profile=profile, profile_problem=problem)
    return grader.judge_speed(verdict, trial, peak)


def roof_of(device: str, peak: HostPeak) -> Roof:
    """What no honest call can beat here (``speed_trial.Roof``).  On a GPU only the
    datasheet's bandwidth: its float32 compute roof is without tensor cores, which a
    learner's TF32 or half-precision kernel may honestly beat."""
    if device == "cuda":
        return Roof(peak.gbs, None)
    measured = peaks.current()
    return Roof(measured.cache_gbs or measured.bandwidth_gbs, measured.gflops)


def host_peak(device: str) -> HostPeak:
    """This host's roofs on ``device``: the datasheet's for this GPU (none when it is not in
    the table), the ones measured on the job core on a CPU host."""
    if device == "cuda":
        return gpu_peak(gpu_name())
    measured = peaks.current()
    return measured_peak(measured.cpu_model, measured.bandwidth_gbs, measured.gflops)


def gpu_name() -> str:
    """The GPU's name as the driver reports it, read here in the trusted process; empty
    (so no peak, and no bandwidth check) when this process cannot ask the driver."""
    import torch

    try:
        return torch.cuda.get_device_name()
    except (RuntimeError, AssertionError):
        return ""
