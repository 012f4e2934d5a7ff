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
"""

from __future__ import annotations

from graders.base import Check

#: on a GPU: the fraction of the datasheet peak that passes
GPU_FRACTION = 0.5
#: above this fraction of peak a measurement is physically implausible: not believed
IMPLAUSIBLE_FRACTION = 1.05
#: at or above this fraction the op is called memory-bandwidth bound
BOUND_FRACTION = 0.5


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
