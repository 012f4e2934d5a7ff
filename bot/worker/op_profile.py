"""Profile a passing speed-ranked function after its trial: where its time goes, as advice.

The function runs in an ordinary sandboxed job on one fresh draw of the trial's inputs: a
warm-up call, then ``PROFILED_CALLS`` calls under ``torch.profiler`` (``sandbox.api.Call``'s
``profile``), inside what is left of the trial's time budget.  It is the learner's own
process measuring itself, so what comes back is untrusted: the sandbox's decoder has
validated and cleaned it, it is summarised here per call, and it is only ever shown as
advice (``graders.bottleneck`` reads it to name the bound), never ranked.  A profile that
fails or runs out of time leaves the verdict as it would be without one, with one line
saying why.  Runs in the worker (imports torch).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

import graders.speed
from bot.jobs.job_spec import SpeedSpec
from bot.worker.speed_trial import fresh_inputs
from graders.base import OpProfile, OpShare
from graders.tensors import to_raw
from sandbox.api import Call, Limits, OpTime, SandboxRequest, SandboxResult

#: calls profiled after one unprofiled warm-up (the first call pays for lazy setup)
PROFILED_CALLS = 3
#: operators kept in a profile, largest self time first
TOP = 5
#: the least time worth starting a profile in
MIN_WALL_S = 2.0
#: a job's own account of why its profile failed, shown cut to this
PROBLEM_CHARS = 200


class JobRunner(Protocol):
    """What profiling needs of the sandbox (``sandbox.Zygote`` provides it)."""

    def run(self, request: SandboxRequest) -> SandboxResult: ...


def profile_function(
    speed: SpeedSpec,
    source: str,
    filename: str,
    sandbox: JobRunner,
    limits: Limits,
    device: str,
    *,
    wall_s: float,
) -> tuple[OpProfile | None, str]:
    """The function's profile, or None and why not; the job may take ``wall_s`` at most."""
    if wall_s < MIN_WALL_S:
        return None, "no time was left in the trial's budget"
    inputs = tuple(to_raw(t) for t in fresh_inputs(graders.speed.load(speed.reference)))
    calls = (
        Call(speed.function, inputs, "warm-up", trace=False),
        *(
            Call(speed.function, inputs, f"profiled {n + 1}", trace=False, profile=True)
            for n in range(PROFILED_CALLS)
        ),
    )
    wall = min(wall_s, limits.wall_s)
    request = SandboxRequest(
        source,
        filename,
        calls,
        dataclasses.replace(limits, wall_s=wall, cpu_s=min(limits.cpu_s, wall)),
        device,  # type: ignore[arg-type]  # "cpu" or "cuda", as the trial ran
        trace_ops=False,
    )
    result = sandbox.run(request)
    if result.status != "ok":
        return None, f"the profiled run ended early ({result.message})"
    profiled = result.calls[1:]
    problems = [c.profile_problem for c in profiled if c.profile is None and c.profile_problem]
    if problems:
        return None, _shown(problems[0])
    ops = [c.profile for c in profiled if c.status == "ok" and c.profile is not None]
    if len(ops) < PROFILED_CALLS:
        return None, "a profiled call did not return"
    return summarise(ops, device), ""


def _shown(problem: str) -> str:
    """A problem the job reported (its own words: untrusted) as one printable line."""
    line = "".join(c if c.isprintable() else " " for c in problem).strip()
    return line[:PROBLEM_CHARS] or "the profile failed"


def summarise(calls: Sequence[tuple[OpTime, ...]], device: str) -> OpProfile:
    """Per call of the function: the operators it called itself, the self time of all of
    them, and the largest (by self time: the kernels' on a GPU, where they are the work)."""
    per_call = len(calls)
    cpu: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # name -> self s, count
    kernels: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    top_level = 0
    for ops in calls:
        for op in ops:
            into = kernels if op.kernel else cpu
            into[op.name][0] += op.self_s
            into[op.name][1] += op.count
            if not op.kernel:
                top_level += op.top_level
    timed = kernels if device == "cuda" and kernels else cpu
    total = sum(self_s for self_s, _ in timed.values()) / per_call
    ranked = sorted(timed.items(), key=lambda item: (-item[1][0], item[0]))[:TOP]
    top = tuple(
        OpShare(
            name,
            self_s / per_call,
            (self_s / per_call) / total if total > 0 else 0.0,
            count / per_call,
        )
        for name, (self_s, count) in ranked
    )
    launched = sum(count for _, count in kernels.values()) / per_call if device == "cuda" else None
    return OpProfile(top_level / per_call, total, top, launched)
