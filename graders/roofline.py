"""The roofline reading of a speed trial: achieved memory bandwidth against the host's peak.

Pure judgement (no timing happens here): the trial (``bot.worker.speed_trial``) measures the
compute time of the learner's function and of the eager reference by the worker's clock, the
worker knows its peak (measured at start on a CPU host, the datasheet's on a GPU), and this
turns them into one verdict check that names the bottleneck.

A GPU's fused pointwise kernel streams near its HBM peak, so there the reading is a check that
passes at half the datasheet peak, which eager code does not reach.  One CPU core evaluating
tanh runs out of arithmetic long before it saturates memory: here a chain fused in place reached
about 10% of the measured peak and the eager chain 9% (bench/speed_trials.py), closer than a
busy host's noise.  A CPU check would pass or fail the same file by luck, so on a CPU the
reading is reported in the verdict (``cpu_reading``) and not judged.

A grader whose lesson is bandwidth says so in its ``roofline_reading`` hook
(``graders.cases.CaseGrader``), with ``bandwidth_lesson``; every other speed-ranked task
carries the figures on its result and says nothing of them.  The datasheet peaks of the GPUs
this knows are here too (``PEAK_BANDWIDTH``): the worker looks its GPU up with ``gpu_peak``.
Torch-free.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from graders.base import Check, HostPeak, TrialOutcome

#: on a GPU: the fraction of the datasheet peak that passes
GPU_FRACTION = 0.5
#: above this fraction of peak a measurement is physically implausible: not believed
IMPLAUSIBLE_FRACTION = 1.05
#: at or above this fraction the op is called memory-bandwidth bound
BOUND_FRACTION = 0.5

#: (pattern on the lowercased device name, label, datasheet HBM/GDDR peak in bytes/s);
#: first match wins, so the more specific variants come first.  Unknown names get no peak.
PEAK_BANDWIDTH: tuple[tuple[str, str, float], ...] = (
    (r"\bh200\b", "H200", 4.8e12),
    (r"\bh100\b.*\bpcie\b", "H100 PCIe", 2.0e12),
    (r"\bh100\b.*\bnvl\b", "H100 NVL", 3.9e12),
    (r"\bh100\b.*\b(sxm\w*|hbm3)\b", "H100 SXM", 3.35e12),
    (r"\ba100\b.*\b80gb\b.*\bpcie\b", "A100 80GB PCIe", 1.935e12),
    (r"\ba100\b.*\bsxm\w*\b.*\b80gb\b", "A100 80GB SXM", 2.039e12),
    (r"\ba100\b.*\b40gb\b", "A100 40GB", 1.555e12),
    (r"\bl4\b", "L4", 3.0e11),
    (r"\ba10g?\b", "A10", 6.0e11),
    (r"\bt4\b", "T4", 3.2e11),
    (r"\brtx 4090\b", "RTX 4090", 1.008e12),
)


@functools.lru_cache(maxsize=8)
def peak_for(name: str) -> tuple[str, float] | None:
    """The datasheet peak bandwidth of a GPU by name, or None when it is not in the table."""
    lowered = name.lower()
    for pattern, label, peak in PEAK_BANDWIDTH:
        if re.search(pattern, lowered):
            return label, peak
    return None


def gpu_peak(name: str) -> HostPeak:
    """A GPU's peak by the name its driver reports (read by the trusted process): the
    datasheet's, or none for a GPU not in the table."""
    found = peak_for(name)
    if found is None:
        return HostPeak("cuda", name, None)
    return HostPeak("cuda", name, found[1] / 1e9, f"the {found[0]}'s datasheet")


def measured_peak(cpu_model: str, bandwidth_gbs: float) -> HostPeak:
    """A CPU host's peak: the bandwidth its worker measured on the job core at start."""
    return HostPeak("cpu", cpu_model, bandwidth_gbs, "a measured")


@dataclass(frozen=True)
class Reading:
    """What a task makes of a trial's bandwidth: checks that count towards the verdict,
    and notes that are only reported.  Most tasks make nothing of it."""

    checks: tuple[Check, ...] = ()
    notes: tuple[str, ...] = ()


def bandwidth_lesson(function: str, trial: TrialOutcome, peak: HostPeak) -> Reading:
    """The reading of a task whose lesson is bandwidth: on a GPU a check against the
    datasheet's peak (not judged when none is on file), on a CPU host a note."""
    if peak.device == "cuda":
        return Reading(checks=(_gpu_check(function, trial, peak),))
    if trial.result is not None and peak.gbs is not None:
        result = trial.result
        return Reading(notes=(cpu_reading(result.achieved_gbs, peak.gbs, result.reference_gbs),))
    return Reading()


def _gpu_check(function: str, trial: TrialOutcome, peak: HostPeak) -> Check:
    name = f"{function}: memory bandwidth"
    if trial.result is None:
        return Check(name, False, f"not measured: {trial.reason}")
    if peak.gbs is None:
        achieved = trial.result.achieved_gbs
        measured = f"{achieved:.0f} GB/s" if achieved is not None else "no usable figure"
        return Check(
            name,
            False,
            f"not judged: no datasheet peak is on file for {peak.name}; achieved {measured}",
            checked=False,
        )
    return bandwidth_check(function, trial.result.achieved_gbs, peak.gbs, peak.source)


def bottleneck(fraction: float) -> str:
    """What bounds an op that reached ``fraction`` of peak bandwidth."""
    if fraction >= BOUND_FRACTION:
        return f"memory-bandwidth bound, {fraction:.0%} of peak"
    return f"{fraction:.0%} of peak, so arithmetic or per-op overhead bounds it before memory does"


def bandwidth_check(
    function: str, achieved_gbs: float | None, peak_gbs: float, peak_source: str
) -> Check:
    """The GPU check; ``peak_source`` says where the peak comes from, e.g. "the H200's
    datasheet"."""
    name = f"{function}: memory bandwidth"
    if achieved_gbs is None:
        return Check(
            name,
            False,
            "no bandwidth could be worked out from this trial; grade again",
        )
    fraction = achieved_gbs / peak_gbs
    reading = f"{achieved_gbs:.1f} GB/s of {peak_source} {peak_gbs:.1f} GB/s"
    if fraction > IMPLAUSIBLE_FRACTION:
        return Check(
            name,
            False,
            f"{reading}: faster than the memory can go, so the work cannot all have been done "
            "in the timed call",
        )
    if fraction >= GPU_FRACTION:
        return Check(
            name, True, f"{reading}: {bottleneck(fraction)} (pass mark {GPU_FRACTION:.0%})"
        )
    return Check(
        name,
        False,
        f"{reading}: {bottleneck(fraction)}; the pass mark is {GPU_FRACTION:.0%}. Each eager op "
        "reads and writes the whole tensor: fuse the chain, e.g. with torch.compile.",
    )


def cpu_reading(achieved_gbs: float | None, peak_gbs: float, reference_gbs: float | None) -> str:
    """The roofline line a CPU verdict carries as a note: reported, not judged."""
    if achieved_gbs is None:
        return "Roofline: no bandwidth could be worked out this time."
    against = f"; {achieved_gbs / reference_gbs:.2f}× the eager chain's" if reference_gbs else ""
    return (
        f"Roofline: {achieved_gbs:.1f} GB/s of a measured {peak_gbs:.1f} GB/s: "
        f"{bottleneck(achieved_gbs / peak_gbs)}{against}. Reported, not judged, on a CPU host: "
        "one core evaluating tanh runs out of arithmetic long before memory, and fusing gains "
        "less there than the host's noise."
    )
