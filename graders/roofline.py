"""The roofs of a host and the bandwidth check of a task whose lesson is bandwidth.

The worker knows its roofs (``HostPeak``): measured at start on a CPU host, the datasheet's
on a GPU (``DATASHEETS``, looked up with ``gpu_peak``).  Every speed verdict places the
learner's call under them and names its bound (``graders.bottleneck``).

A task whose lesson is bandwidth (fused-gelu) says so in its ``roofline_reading`` hook
(``graders.cases.CaseGrader``), with ``bandwidth_lesson``.  A GPU's fused pointwise kernel
streams near its HBM peak, so there the reading is a check that passes at half the
datasheet peak, which eager code does not reach.  One CPU core evaluating tanh runs out of
arithmetic long before it saturates memory: here a chain fused in place reached about 10% of
the measured peak and the eager chain 9% (bench/speed_trials.py), closer than a busy host's
noise, so on a CPU nothing is judged.  Pure judgement, no timing; torch-free.
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


@dataclass(frozen=True)
class Datasheet:
    """A GPU's datasheet roofs: HBM/GDDR bandwidth and float32 (non-tensor-core) compute,
    which float32 matmuls use (torch leaves TF32 off for them by default)."""

    label: str
    bytes_per_s: float
    flops_per_s: float


#: (pattern on the lowercased device name, its datasheet); first match wins, so the more
#: specific variants come first.  Unknown names get no roofs.
DATASHEETS: tuple[tuple[str, Datasheet], ...] = (
    (r"\bh200\b", Datasheet("H200", 4.8e12, 67e12)),
    (r"\bh100\b.*\bpcie\b", Datasheet("H100 PCIe", 2.0e12, 51e12)),
    (r"\bh100\b.*\bnvl\b", Datasheet("H100 NVL", 3.9e12, 60e12)),
    (r"\bh100\b.*\b(sxm\w*|hbm3)\b", Datasheet("H100 SXM", 3.35e12, 67e12)),
    (r"\ba100\b.*\b80gb\b.*\bpcie\b", Datasheet("A100 80GB PCIe", 1.935e12, 19.5e12)),
    (r"\ba100\b.*\bsxm\w*\b.*\b80gb\b", Datasheet("A100 80GB SXM", 2.039e12, 19.5e12)),
    (r"\ba100\b.*\b40gb\b", Datasheet("A100 40GB", 1.555e12, 19.5e12)),
    (r"\bl4\b", Datasheet("L4", 3.0e11, 30.3e12)),
    (r"\ba10g?\b", Datasheet("A10", 6.0e11, 31.2e12)),
    (r"\bt4\b", Datasheet("T4", 3.2e11, 8.1e12)),
    (r"\brtx 4090\b", Datasheet("RTX 4090", 1.008e12, 82.6e12)),
)


@functools.lru_cache(maxsize=8)
def peak_for(name: str) -> Datasheet | None:
    """The datasheet roofs of a GPU by name, or None when it is not in the table."""
    lowered = name.lower()
    for pattern, sheet in DATASHEETS:
        if re.search(pattern, lowered):
            return sheet
    return None


def gpu_peak(name: str) -> HostPeak:
    """A GPU's roofs by the name its driver reports (read by the trusted process): the
    datasheet's, or none for a GPU not in the table."""
    found = peak_for(name)
    if found is None:
        return HostPeak("cuda", name, None)
    return HostPeak(
        "cuda",
        name,
        found.bytes_per_s / 1e9,
        f"the {found.label}'s datasheet",
        found.flops_per_s / 1e9,
    )


def measured_peak(cpu_model: str, bandwidth_gbs: float, gflops: float | None = None) -> HostPeak:
    """A CPU host's roofs: what its worker measured on the job core at start."""
    return HostPeak("cpu", cpu_model, bandwidth_gbs, "a measured", gflops)


@dataclass(frozen=True)
class Reading:
    """What a task makes of a trial's bandwidth: checks that count towards the verdict,
    and notes that are only reported.  Most tasks make nothing of it."""

    checks: tuple[Check, ...] = ()
    notes: tuple[str, ...] = ()


def bandwidth_lesson(function: str, trial: TrialOutcome, peak: HostPeak) -> Reading:
    """The reading of a task whose lesson is bandwidth: on a GPU a check against the
    datasheet's peak (not judged when none is on file).  On a CPU host nothing more than
    every speed verdict's bound (``graders.bottleneck``): one core evaluating tanh runs out of
    arithmetic long before memory, and fusing gains less there than the host's noise, so a
    check would pass or fail the same file by luck."""
    if peak.device == "cuda":
        return Reading(checks=(_gpu_check(function, trial, peak),))
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
