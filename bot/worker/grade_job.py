"""Grade one job spec: the single path shared by workers and ``brrrbot grade``.

Runs in a worker process (it imports graders, hence torch).  The grader plans
the calls with a fresh seed in this trusted process, the sandbox runs them,
and the grader judges after the job process is gone.  Everything about the
task comes from the spec, so a worker grades without any quest files.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from contextlib import AbstractContextManager
from typing import Protocol

from bot.jobs.job_spec import JobSpec
from bot.worker.speed_verdict import add_speed
from graders import load_grader
from graders.base import Verdict
from sandbox.api import SandboxRequest, SandboxResult
from sandbox.turn_client import Turn
from sandbox.turns import TurnSpec


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
    verdict = add_speed(
        spec, grader.judge(spec.task_ref, plan, result, spec.source), sandbox, device
    )
    return dataclasses.replace(
        verdict,
        duration_s=time.perf_counter() - started,
        device=result.device,
        notes=(*spec.notes, *verdict.notes),
    )
