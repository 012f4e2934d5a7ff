"""The roofline reading of a speed trial: achieved memory bandwidth against the host's peak.

Pure judgement (no timing happens here): the trial (``bot.grading.speed_trial``) measures the
learner's compute time by the worker's clock, the worker knows its peak (measured at start on
a CPU host, the datasheet's on a GPU), and this turns the two into one verdict check that
names the bottleneck.  The pass marks differ by host: a GPU's fused pointwise kernel streams
near its HBM peak, while one CPU core evaluating tanh is bound by arithmetic well before it
saturates memory, so the CPU mark is set from what a fused chain reaches there
(bench/roofline_cpu.py) and an eager chain does not.
"""

from __future__ import annotations

from graders.base import Check

#: fraction of peak bandwidth that passes, by device kind
PASS_FRACTION = {"cuda": 0.5, "cpu": 0.2}
#: above this fraction of peak a measurement is physically implausible: not believed
IMPLAUSIBLE_FRACTION = 1.05
#: at or above this fraction the op is called memory-bandwidth bound
BOUND_FRACTION = 0.5


def bandwidth_check(
    function: str, achieved_gbs: float | None, peak_gbs: float, peak_source: str, device: str
) -> Check:
    """``peak_source`` says where the peak comes from: "a measured" or "the H200's datasheet"."""
    name = f"{function}: memory bandwidth"
    mark = PASS_FRACTION["cuda" if device == "cuda" else "cpu"]
    if achieved_gbs is None:
        return Check(
            name,
            False,
            "the compute time was lost in the noise of the transfers, so no bandwidth could "
            "be worked out; grade again on a quieter host",
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
    if fraction >= BOUND_FRACTION:
        bottleneck = f"memory-bandwidth bound, {fraction:.0%} of peak"
    else:
        bottleneck = (
            f"{fraction:.0%} of peak, so arithmetic or per-op overhead bounds it before memory does"
        )
    if fraction >= mark:
        return Check(name, True, f"{reading}: {bottleneck} (pass mark {mark:.0%})")
    return Check(
        name,
        False,
        f"{reading}: {bottleneck}; the pass mark is {mark:.0%}. Each eager op reads and writes "
        "the whole tensor: fuse the chain (in-place ops on a CPU, torch.compile on a GPU).",
    )
