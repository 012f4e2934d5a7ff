"""After a passing verdict: run the speed trial and fold what it found into the verdict.

A speed result never changes XP: it rides on the verdict (``Verdict.speed``) for the boards.
Every speed reference declares the bytes its op must move, so every result carries achieved
GB/s and this host's peak (for the boards and the bottleneck work that follows); only a task
whose lesson is bandwidth (``JUDGED_BANDWIDTH``: roofline/fused-gelu) has it in words, as a
note on a CPU and as a check on a GPU.  The
trial's physics floor uses this host's roof: the cache-resident bandwidth and the matmul
FLOP/s it measured on a CPU, the datasheet's bandwidth on a GPU.
"""

from __future__ import annotations

import dataclasses

import graders.speed
from bot.jobs.job_spec import JobSpec
from bot.worker import peaks
from bot.worker.speed_trial import Roof, TrialOutcome, TurnRunner, run_trial
from graders.base import Check, Verdict
from graders.fused_pointwise import device_name as gpu_name
from graders.fused_pointwise import peak_for
from graders.roofline import bandwidth_check, cpu_reading


def add_speed(spec: JobSpec, verdict: Verdict, sandbox: TurnRunner, device: str) -> Verdict:
    """``verdict`` with the trial's result, or with a note saying why there is none."""
    if spec.speed is None or verdict.status != "passed":
        return verdict
    peak = _peak(device)
    outcome = run_trial(
        spec.speed, spec.source, spec.filename, sandbox, spec.limits, device, roof=_roof(device)
    )
    if outcome.result is None and outcome.our_fault:
        return Verdict.internal_error(
            verdict.task, f"the speed trial could not run on our side: {outcome.reason}"
        )
    result, checks = outcome.result, verdict.checks
    notes = [
        f"Speed: {result.describe()}, timed by the worker on fresh inputs."
        if result is not None
        else f"Speed not ranked: {outcome.reason}."
    ]
    judged = getattr(graders.speed.load(spec.speed.reference), "JUDGED_BANDWIDTH", False)
    if result is not None and peak is not None:
        result = dataclasses.replace(result, peak_gbs=peak[0])
    if device == "cuda" and judged:
        checks = (*checks, _bandwidth(spec.speed.function, outcome, peak, device))
    elif judged and result is not None and peak is not None:  # its wording is this lesson's
        notes.append(cpu_reading(result.achieved_gbs, peak[0], result.reference_gbs))
    return _rescored(dataclasses.replace(verdict, checks=checks, speed=result), notes)


def _roof(device: str) -> Roof:
    """What no honest call can beat here (``speed_trial.Roof``)."""
    if device == "cuda":
        found = peak_for(gpu_name())
        return Roof(None if found is None else found[1] / 1e9, None)
    measured = peaks.current()
    return Roof(measured.cache_gbs or measured.bandwidth_gbs, measured.gflops)


def _peak(device: str) -> tuple[float, str] | None:
    """This host's peak GB/s and where it comes from; None for a GPU not in the table."""
    if device == "cuda":
        found = peak_for(gpu_name())
        return None if found is None else (found[1] / 1e9, f"the {found[0]}'s datasheet")
    return peaks.current().bandwidth_gbs, "a measured"


def _bandwidth(
    function: str, outcome: TrialOutcome, peak: tuple[float, str] | None, device: str
) -> Check:
    name = f"{function}: memory bandwidth"
    if outcome.result is None:
        return Check(name, False, f"not measured: {outcome.reason}")
    if peak is None:
        achieved = outcome.result.achieved_gbs
        measured = f"{achieved:.0f} GB/s" if achieved is not None else "no usable figure"
        return Check(
            name,
            False,
            f"not judged: no datasheet peak is on file for {gpu_name()}; achieved {measured}",
            checked=False,
        )
    return bandwidth_check(function, outcome.result.achieved_gbs, peak[0], peak[1])


def _rescored(verdict: Verdict, notes: list[str]) -> Verdict:
    passed = sum(c.passed for c in verdict.checks)
    failing = [c for c in verdict.checks if not c.passed and c.checked]
    status = "passed" if not failing else "failed"
    feedback = verdict.feedback
    if failing:
        feedback = (
            f"{passed} of {len(verdict.checks)} checks passed. Start with “{failing[0].name}” "
            "below."
        )
    return dataclasses.replace(
        verdict,
        status=status,
        score=passed / len(verdict.checks) if verdict.checks else verdict.score,
        feedback=feedback,
        notes=(*verdict.notes, *notes),
    )
