"""The roofline reading of a speed trial: achieved memory bandwidth against the host's peak.

Pure judgement (no timing happens here): the trial (``bot.grading.speed_trial``) measures the
compute time of the learner's function and of the eager reference by the worker's clock, the
worker knows its peak (measured at start on a CPU host, the datasheet's on a GPU), and this
turns them into one verdict check that names the bottleneck.

The pass rule differs by host.  A GPU's fused pointwise kernel streams near its HBM peak, so
there it passes at half the datasheet peak, which eager code does not reach.  One CPU core
evaluating tanh runs out of arithmetic long before it saturates memory: here an eager chain
reached about 8% of the measured peak and a chain fused in place about 13% (bench/speed_trials.py),
too close for a fixed fraction to tell them apart through a busy host's noise.  So on a CPU it
passes when the learner's compute moves the bytes at least ``CPU_SPEEDUP`` times as fast as the
eager reference did in the same trial, on the same core, moments apart.
"""

from __future__ import annotations

from graders.base import Check

#: on a GPU: the fraction of the datasheet peak that passes
GPU_FRACTION = 0.5
#: on a CPU: how many times the eager reference's bandwidth passes
CPU_SPEEDUP = 1.25
#: above this fraction of peak a measurement is physically implausible: not believed
IMPLAUSIBLE_FRACTION = 1.05
#: at or above this fraction the op is called memory-bandwidth bound
BOUND_FRACTION = 0.5


def bandwidth_check(
    function: str,
    achieved_gbs: float | None,
    peak_gbs: float,
    peak_source: str,
    device: str,
    reference_gbs: float | None = None,
) -> Check:
    """``peak_source`` says where the peak comes from: "a measured" or "the H200's datasheet";
    ``reference_gbs`` is the eager reference's figure from the same trial (CPU rule)."""
    name = f"{function}: memory bandwidth"
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
    if device == "cuda":
        if fraction >= GPU_FRACTION:
            return Check(name, True, f"{reading}: {bottleneck} (pass mark {GPU_FRACTION:.0%})")
        return Check(
            name,
            False,
            f"{reading}: {bottleneck}; the pass mark is {GPU_FRACTION:.0%}. Each eager op reads "
            "and writes the whole tensor: fuse the chain, e.g. with torch.compile.",
        )
    return _cpu_rule(name, f"{reading}: {bottleneck}", achieved_gbs, reference_gbs)


def _cpu_rule(name: str, reading: str, achieved_gbs: float, reference_gbs: float | None) -> Check:
    if reference_gbs is None:
        return Check(name, False, f"{reading}; the eager chain's own figure was lost in the noise")
    speedup = achieved_gbs / reference_gbs
    against = f"{speedup:.2f}× the eager chain's bandwidth (pass mark {CPU_SPEEDUP:.2f}×)"
    if speedup >= CPU_SPEEDUP:
        return Check(name, True, f"{reading}; {against}")
    return Check(
        name,
        False,
        f"{reading}; {against}. Each eager op reads and writes the whole tensor: on a CPU, "
        "fuse by hand with in-place ops on one buffer (add_, mul_, tanh_).",
    )
