"""Name what bounds a speed-ranked function: compute, memory bandwidth, per-operator overhead,
or neither roof, from the trial's trusted numbers and the function's own profile.

The numbers (``Placement``): the bytes the op must move and the FLOPs it must do (the speed
reference's lower bounds), the time of the learner's fastest timed call (the worker's
clock), and the host's roofs (``HostPeak``: measured on a CPU host, the datasheet's on a
GPU).  Arithmetic intensity is FLOPs per byte; at that intensity the roofline allows
``min(peak GFLOP/s, intensity × peak GB/s)``.

The rules, first match wins (docs/learners/speed-boards.md states them for learners):

1. **compute-bound** when the call reached at least half the compute roof (and no less of it
   than of the bandwidth roof);
2. **memory-bound** when it reached at least half the bandwidth roof;
3. **overhead-bound** when, below both, its profile shows the time going to the cost of
   operators rather than their work: the operators it calls average under
   ``OVERHEAD_OP_S`` of self time each (each pays a dispatch, or on a GPU a launch), or
   together fill under half the fastest timed call (the rest is Python between them, or
   the fixed cost of a call);
4. otherwise **below both roofs**: the operator that dominates the profile sets the pace by
   its own throughput (on one CPU core, tanh's arithmetic is neither bandwidth nor the
   matmul FLOP rate), and the sentence names it rather than forcing one of the three words.

Without a profile, rules 3 and 4 cannot be told apart and the sentence says only where the
call sits.  Torch-free: the bot may render what this decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from graders.base import Bound, HostPeak, OpProfile, SpeedResult

#: "near a roof": at least this share of it
ROOF_SHARE = 0.5
#: mean self time per called operator under which dispatch or launch cost dominates
OVERHEAD_OP_S = {"cpu": 20e-6, "cuda": 10e-6}
#: operators together filling less than this share of the timed call leave the rest to Python
INSIDE_SHARE = 0.5
#: operators listed in a profile note
LISTED = 3


@dataclass(frozen=True)
class Placement:
    """A call on the roofline: where it sits and under which roofs (None: unknown)."""

    intensity: float  # FLOP per byte
    gbs: float  # achieved
    gflops: float  # achieved
    peak_gbs: float | None
    peak_gflops: float | None
    seconds: float  # the fastest timed call, which these were reached in

    @property
    def memory_share(self) -> float | None:
        return self.gbs / self.peak_gbs if self.peak_gbs else None

    @property
    def compute_share(self) -> float | None:
        return self.gflops / self.peak_gflops if self.peak_gflops else None

    @property
    def attainable_gflops(self) -> float | None:
        """What the roofline allows at this intensity (the bandwidth slope alone when no
        compute roof is known)."""
        if not self.peak_gbs:
            return None
        slope = self.intensity * self.peak_gbs
        return min(slope, self.peak_gflops) if self.peak_gflops else slope

    @property
    def roof_share(self) -> float | None:
        attainable = self.attainable_gflops
        return self.gflops / attainable if attainable else None


def placement(result: SpeedResult, peak: HostPeak) -> Placement | None:
    """The learner's call on ``peak``'s roofline; None when the trial carries no figures."""
    gbs, gflops = result.achieved_gbs, result.achieved_gflops
    if not result.moved_bytes or result.flops is None or gbs is None or gflops is None:
        return None
    seconds = result.moved_bytes / (gbs * 1e9)
    return Placement(result.flops / result.moved_bytes, gbs, gflops, peak.gbs, peak.gflops, seconds)


@dataclass(frozen=True)
class RooflineFigures:
    """What a roofline picture of one result is drawn from, as stored with it
    (``speed_results``): the same numbers whether a verdict, a weekly post or a page draws."""

    moved_bytes: int
    flops: int
    achieved_gflops: float
    reference_gflops: float | None
    peak_gbs: float
    peak_gflops: float | None
    bound: Bound | None = None

    @property
    def intensity(self) -> float:
        return self.flops / self.moved_bytes

    @classmethod
    def of(cls, result: SpeedResult) -> RooflineFigures | None:
        """A result's figures; None for one that cannot be drawn (no figures, or no
        bandwidth roof known where it ran)."""
        if (
            not result.moved_bytes
            or result.flops is None
            or result.achieved_gflops is None
            or result.peak_gbs is None
        ):
            return None
        return cls(
            result.moved_bytes,
            result.flops,
            result.achieved_gflops,
            result.reference_gflops,
            result.peak_gbs,
            result.peak_gflops,
            result.bound,
        )


@dataclass(frozen=True)
class Naming:
    bound: Bound | None  # None when nothing could be placed
    sentence: str


def name_bound(result: SpeedResult, profile: OpProfile | None, peak: HostPeak) -> Naming:
    """The bound of the learner's call and the sentence that says it, by the rules above."""
    placed = placement(result, peak)
    if placed is None:  # a result without figures (measured before they were kept)
        return Naming(None, "")
    if not placed.peak_gbs:
        return Naming(None, f"No roofline is known for {peak.name}, so no bound is named.")
    compute, memory = placed.compute_share, placed.gbs / placed.peak_gbs
    if compute is not None and compute >= ROOF_SHARE and compute >= memory:
        return Naming(
            Bound.COMPUTE,
            f"Compute-bound: {compute:.0%} of {_roof(peak, placed.peak_gflops, 'GFLOP/s')}.",
        )
    if memory >= ROOF_SHARE:
        return Naming(
            Bound.MEMORY, f"Memory-bound: {memory:.0%} of {_roof(peak, placed.peak_gbs, 'GB/s')}."
        )
    where = (
        f"{placed.roof_share:.0%} of the {placed.attainable_gflops:.3g} GFLOP/s the roofline "
        f"allows at {placed.intensity:.3g} FLOP/byte"
    )
    if profile is None or not profile.top:
        return Naming(None, f"Below both roofs: {where}; no profile to say what bounds it.")
    operators = max(profile.operators, 1.0)
    mean_s = profile.total_s / operators
    # against the fastest timed call: what a busy host adds to a call, a median keeps
    inside = profile.total_s / placed.seconds
    if mean_s < OVERHEAD_OP_S.get(peak.device, OVERHEAD_OP_S["cpu"]) or inside < INSIDE_SHARE:
        return Naming(Bound.OVERHEAD, _overhead(operators, mean_s, inside))
    leader = profile.top[0]
    passes = (
        f" {operators:.0f} operators per call, each a pass over memory that one fused "
        "kernel would make once."
        if operators >= 3
        else ""
    )
    return Naming(
        Bound.NEITHER,
        f"Below both roofs: {where}. Neither memory nor the counted FLOPs bound it: "
        f"`{leader.name}` takes {leader.share:.0%} of the time, at its own pace.{passes}",
    )


def _overhead(operators: float, mean_s: float, inside: float) -> str:
    if operators < 1.5:
        body = f"one operator of {_us(mean_s)} per call"
    else:
        body = f"{operators:.0f} operators per call, {_us(mean_s)} each on average"
    rest = f", and only {inside:.0%} of the call inside them" if inside < INSIDE_SHARE else ""
    lever = (
        "fewer, larger operations (vectorise, fuse) are the lever"
        if operators >= 1.5
        else "the fixed cost of a call, not its work, is what was timed"
    )
    return f"Overhead-bound: {body}{rest}; {lever}."


def _roof(peak: HostPeak, value: float, unit: str) -> str:
    if peak.device == "cuda":
        return f"{peak.source or 'the datasheet'} {value:,.0f} {unit}"
    return f"this worker's measured {value:.3g} {unit}"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} µs"


def profile_note(profile: OpProfile) -> str:
    """The profile in one line, saying what it is: the learner's process timing itself."""
    listed = ", ".join(f"`{op.name}` {op.share:.0%}" for op in profile.top[:LISTED])
    kernels = f", {profile.kernels:.0f} GPU kernels" if profile.kernels is not None else ""
    return (
        "Profile (your code timing itself in its sandbox: advice, never ranked): "
        f"{profile.operators:.0f} operators per call{kernels}; {listed}."
    )
