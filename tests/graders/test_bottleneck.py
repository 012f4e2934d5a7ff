"""The rules that name a speed-ranked call's bound, on numbers worked out by hand: which
rule decides, at its boundary, and the sentence each gives.

The known cases measured on this machine (a Python loop, a matmul, an eager and a fused
pointwise chain) are in ``tests/worker/test_bottleneck_cases.py``.
"""

from __future__ import annotations

import dataclasses

import pytest

from graders.base import Bound, HostPeak, OpProfile, OpShare, SpeedResult
from graders.bottleneck import RooflineFigures, name_bound, placement, profile_note

CPU = HostPeak("cpu", "AMD EPYC 7B13", 17.0, "a measured", 150.0)
H200 = HostPeak("cuda", "NVIDIA H200", 4800.0, "the H200's datasheet", 67000.0)


def result(moved: int, flops: int, fastest_s: float, median_s: float | None = None) -> SpeedResult:
    """A trial whose fastest learner call took ``fastest_s``: its GB/s and GFLOP/s."""
    return SpeedResult(
        ratio=1.0,
        learner_s=median_s if median_s is not None else fastest_s,
        reference_s=fastest_s,
        spread=0.05,
        pairs=50,
        device=CPU.name,
        achieved_gbs=moved / fastest_s / 1e9,
        moved_bytes=moved,
        flops=flops,
        achieved_gflops=flops / fastest_s / 1e9,
    )


def profile(operators: float, total_s: float, *top: tuple[str, float]) -> OpProfile:
    return OpProfile(
        operators,
        total_s,
        tuple(OpShare(name, share * total_s, share, 1.0) for name, share in top),
    )


def test_placement_is_intensity_and_the_roof_at_it() -> None:
    # 8 MB moved, 2 MFLOP: 0.25 FLOP/byte, where 17 GB/s allows 4.25 GFLOP/s
    placed = placement(result(8_000_000, 2_000_000, 0.002), CPU)
    assert placed is not None
    assert placed.intensity == 0.25
    assert placed.gbs == pytest.approx(4.0) and placed.gflops == pytest.approx(1.0)
    assert placed.attainable_gflops == pytest.approx(4.25)
    assert placed.roof_share == pytest.approx(1.0 / 4.25)
    assert placed.memory_share == pytest.approx(4.0 / 17.0)
    assert placed.compute_share == pytest.approx(1.0 / 150.0)
    # far right of the ridge (150/17 ≈ 8.8 FLOP/byte) the ceiling is the compute roof
    matmul = placement(result(12_000_000, 2_000_000_000, 0.02), CPU)
    assert matmul is not None and matmul.attainable_gflops == 150.0


def test_near_the_compute_roof_is_compute_bound() -> None:
    # 2 GFLOP in 14.8 ms: 135 GFLOP/s, 90% of 150
    naming = name_bound(result(12_000_000, 2_000_000_000, 0.0148148148), None, CPU)
    assert naming.bound is Bound.COMPUTE
    assert naming.sentence == "Compute-bound: 90% of this worker's measured 150 GFLOP/s."


def test_near_the_bandwidth_roof_is_memory_bound() -> None:
    # 100 MB in 7.353 ms: 13.6 GB/s, 80% of 17
    naming = name_bound(result(100_000_000, 25_000_000, 0.0073529412), None, CPU)
    assert naming.bound is Bound.MEMORY
    assert naming.sentence == "Memory-bound: 80% of this worker's measured 17 GB/s."


def test_half_a_roof_is_enough_and_just_under_half_is_not() -> None:
    half = 100_000_000 / (8.5e9)  # 8.5 GB/s: exactly half of 17
    assert name_bound(result(100_000_000, 1, half), None, CPU).bound is Bound.MEMORY
    under = name_bound(result(100_000_000, 1, half * 1.001), None, CPU)
    assert under.bound is None and under.sentence.startswith("Below both roofs: ")


def test_the_larger_share_decides_between_two_roofs() -> None:
    # 60% of the compute roof and 90% of the bandwidth roof: memory-bound
    flops = int(0.6 * 150e9 * 0.01)
    moved = int(0.9 * 17e9 * 0.01)
    assert name_bound(result(moved, flops, 0.01), None, CPU).bound is Bound.MEMORY
    # and the other way round
    flops, moved = int(0.9 * 150e9 * 0.01), int(0.6 * 17e9 * 0.01)
    assert name_bound(result(moved, flops, 0.01), None, CPU).bound is Bound.COMPUTE


def test_many_small_operators_are_overhead_bound() -> None:
    """A Python loop over 2048 rows: 6144 operators of 4.1 µs each."""
    loop = profile(6144, 0.025, ("aten::softmax", 0.4), ("aten::select", 0.3))
    naming = name_bound(result(16_777_216, 8_388_608, 0.03), loop, CPU)
    assert naming.bound is Bound.OVERHEAD
    assert naming.sentence == (
        "Overhead-bound: 6144 operators per call, 4.07 µs each on average; fewer, larger "
        "operations (vectorise, fuse) are the lever."
    )


def test_twenty_microseconds_per_operator_is_the_line() -> None:
    slow = result(16_777_216, 8_388_608, 0.002)  # the operators fill the whole call
    at = profile(100, 100 * 20e-6, ("aten::mul", 1.0))  # 20 µs each: not overhead
    assert name_bound(slow, at, CPU).bound is Bound.NEITHER
    under = profile(100, 100 * 19.9e-6, ("aten::mul", 1.0))
    assert name_bound(slow, under, CPU).bound is Bound.OVERHEAD


def test_operators_filling_under_half_the_call_leave_it_to_python() -> None:
    """Two big operators, but 70% of the fastest timed call spent between them (the median
    call, 12 ms on a busy host, is not what counts)."""
    sparse = profile(2, 0.003, ("aten::mm", 0.9), ("aten::add", 0.1))
    naming = name_bound(result(16_777_216, 8_388_608, 0.01, median_s=0.012), sparse, CPU)
    assert naming.bound is Bound.OVERHEAD
    assert naming.sentence == (
        "Overhead-bound: 2 operators per call, 1.5e+03 µs each on average, and only 30% of the "
        "call inside them; fewer, larger operations (vectorise, fuse) are the lever."
    )
    full = profile(2, 0.005, ("aten::mm", 0.9), ("aten::add", 0.1))  # exactly half
    assert name_bound(result(16_777_216, 8_388_608, 0.01, 0.03), full, CPU).bound is Bound.NEITHER


def test_one_tiny_operator_says_the_call_itself_was_timed() -> None:
    cumsum = profile(1, 3e-6, ("aten::cumsum", 1.0))
    naming = name_bound(result(16_384, 2_048, 2e-6, median_s=3e-6), cumsum, CPU)
    assert naming.sentence == (
        "Overhead-bound: one operator of 3 µs per call; the fixed cost of a call, not its "
        "work, is what was timed."
    )


def test_below_both_roofs_the_dominant_operator_is_named() -> None:
    """The eager GELU chain on one core: 0.75 FLOP/byte, 1.5 GFLOP/s."""
    chain = profile(9, 0.0079, ("aten::tanh", 0.62), ("aten::mul", 0.14), ("aten::add", 0.09))
    naming = name_bound(result(8_392_704, 6_291_456, 0.0042, median_s=0.0085), chain, CPU)
    assert naming.bound is Bound.NEITHER
    # 6291456 / 8392704 = 0.7496 FLOP/byte; 17 GB/s allows 12.74 GFLOP/s there; 1.498 reached
    assert naming.sentence == (
        "Below both roofs: 12% of the 12.7 GFLOP/s the roofline allows at 0.75 FLOP/byte. "
        "Neither memory nor the counted FLOPs bound it: `aten::tanh` takes 62% of the time, "
        "at its own pace. 9 operators per call, each a pass over memory that one fused kernel "
        "would make once."
    )
    fused = profile(1, 0.0079, ("aten::tanh", 0.8))
    sentence = name_bound(result(8_392_704, 6_291_456, 0.0042, 0.0085), fused, CPU).sentence
    assert sentence.endswith("`aten::tanh` takes 80% of the time, at its own pace.")


def test_without_a_profile_only_the_place_is_said() -> None:
    naming = name_bound(result(8_392_704, 6_291_456, 0.0042), None, CPU)
    assert naming.bound is None
    assert naming.sentence == (
        "Below both roofs: 12% of the 12.7 GFLOP/s the roofline allows at 0.75 FLOP/byte; "
        "no profile to say what bounds it."
    )


def test_a_gpu_is_set_against_its_datasheet() -> None:
    # 8 MB in 2 µs: 4000 GB/s, 83% of the H200's 4800
    fused = result(8_000_000, 6_000_000, 2e-6)
    assert name_bound(fused, None, H200).sentence == (
        "Memory-bound: 83% of the H200's datasheet 4,800 GB/s."
    )


def test_no_roofs_no_bound_and_no_figures_no_sentence() -> None:
    unknown = HostPeak("cuda", "NVIDIA L40S", None)
    naming = name_bound(result(8_000_000, 6_000_000, 2e-6), None, unknown)
    assert (naming.bound, naming.sentence) == (
        None,
        "No roofline is known for NVIDIA L40S, so no bound is named.",
    )
    old = SpeedResult(1.0, 0.01, 0.01, 0.05, 50, CPU.name, 4.0)  # measured before figures
    assert (name_bound(old, None, CPU).bound, name_bound(old, None, CPU).sentence) == (None, "")


def test_the_profile_note_says_what_it_is_and_lists_the_top_three() -> None:
    chain = profile(9, 0.0079, ("aten::tanh", 0.62), ("aten::mul", 0.14), ("aten::add", 0.09))
    chain = OpProfile(
        chain.operators, chain.total_s, (*chain.top, OpShare("aten::pow", 1, 0.05, 1))
    )
    assert profile_note(chain) == (
        "Profile (your code timing itself in its sandbox: advice, never ranked): 9 operators "
        "per call; `aten::tanh` 62%, `aten::mul` 14%, `aten::add` 9%."
    )
    gpu = OpProfile(9, 0.0001, chain.top[:1], kernels=11)
    assert profile_note(gpu).endswith("9 operators per call, 11 GPU kernels; `aten::tanh` 62%.")


def test_the_figures_a_picture_is_drawn_from_and_when_there_are_none() -> None:
    placed = dataclasses.replace(
        result(8_000_000, 2_000_000, 0.002),
        reference_gflops=0.7,
        peak_gbs=17.0,
        peak_gflops=150.0,
        bound=Bound.NEITHER,
    )
    figures = RooflineFigures.of(placed)
    assert figures == RooflineFigures(8_000_000, 2_000_000, 1.0, 0.7, 17.0, 150.0, Bound.NEITHER)
    assert figures is not None and figures.intensity == 0.25  # FLOPs per byte, a property
    for missing in (
        {"moved_bytes": 0},
        {"moved_bytes": None},
        {"flops": None},
        {"achieved_gflops": None},
        {"peak_gbs": None},
    ):
        assert RooflineFigures.of(dataclasses.replace(placed, **missing)) is None, missing
    # the reference's figure and the compute roof may be unknown: still drawn
    partial = dataclasses.replace(placed, reference_gflops=None, peak_gflops=None)
    assert RooflineFigures.of(partial) is not None


def test_a_trial_without_any_one_figure_is_not_placed() -> None:
    full = result(8_000_000, 2_000_000, 0.002)
    assert placement(full, CPU) is not None
    for missing in (
        {"moved_bytes": 0},
        {"flops": None},
        {"achieved_gbs": None},
        {"achieved_gflops": None},
    ):
        assert placement(dataclasses.replace(full, **missing), CPU) is None, missing


def test_half_the_compute_roof_is_compute_bound_and_a_tie_goes_to_compute() -> None:
    # exactly 75 of 150 GFLOP/s, 10% of the bandwidth roof
    half = name_bound(result(1_700_000, 750_000_000, 0.01), None, CPU)
    assert half.bound is Bound.COMPUTE and half.sentence.startswith("Compute-bound: 50%")
    # 60% of each roof: compute named
    both = name_bound(result(102_000_000, 900_000_000, 0.01), None, CPU)
    assert both.bound is Bound.COMPUTE and both.sentence.startswith("Compute-bound: 60%")


def test_a_bandwidth_roof_of_zero_is_no_roof() -> None:
    zero = HostPeak("cpu", "odd", 0.0, "a measured", 150.0)
    assert name_bound(result(8_000_000, 6_000_000, 2e-6), None, zero).sentence == (
        "No roofline is known for odd, so no bound is named."
    )


def test_on_a_gpu_ten_microseconds_per_operator_is_the_line() -> None:
    """A launch costs less than a CPU dispatch's 20 µs budget allows: 15 µs per operator is
    overhead on a CPU core and work on a GPU."""
    gpu = HostPeak("cuda", "NVIDIA H200", 4800.0, "the H200's datasheet", 67000.0)
    ops = profile(10, 10 * 15e-6, ("aten::mul", 1.0))
    slow = result(160_000, 80_000, 10 * 15e-6)  # 1 GB/s: below either device's roofs
    assert name_bound(slow, ops, CPU).bound is Bound.OVERHEAD
    assert name_bound(slow, ops, gpu).bound is Bound.NEITHER
    under = profile(10, 10 * 9e-6, ("aten::mul", 1.0))
    assert name_bound(result(160_000, 80_000, 10 * 9e-6), under, gpu).bound is Bound.OVERHEAD


def test_the_overhead_sentence_at_its_edges() -> None:
    """1.5 operators a call is plural; exactly half the call inside them says nothing of
    the rest; a profile of no operators at all counts as one."""
    busy = result(16_384, 2_048, 0.001)  # far below both roofs
    assert name_bound(busy, profile(1.5, 3e-6, ("aten::add", 1.0)), CPU).sentence == (
        "Overhead-bound: 2 operators per call, 2 µs each on average, and only 0% of the call "
        "inside them; fewer, larger operations (vectorise, fuse) are the lever."
    )
    half_inside = profile(100, 0.0005, ("aten::add", 1.0))  # 5 µs each, 0.5 of 1 ms
    assert name_bound(busy, half_inside, CPU).sentence == (
        "Overhead-bound: 100 operators per call, 5 µs each on average; fewer, larger "
        "operations (vectorise, fuse) are the lever."
    )
    none = profile(0, 3e-6, ("aten::add", 1.0))
    assert name_bound(busy, none, CPU).sentence.startswith(
        "Overhead-bound: one operator of 3 µs per call, and only 0% of the call"
    )


def test_three_operators_make_passes_and_two_do_not() -> None:
    slow = result(8_392_704, 6_291_456, 0.0042, median_s=0.0085)
    three = name_bound(slow, profile(3, 0.0079, ("aten::tanh", 0.62)), CPU).sentence
    assert three.endswith(
        " 3 operators per call, each a pass over memory that one fused kernel would make once."
    )
    two = name_bound(slow, profile(2, 0.0079, ("aten::tanh", 0.62)), CPU).sentence
    assert two.endswith("`aten::tanh` takes 62% of the time, at its own pace.")
