"""Is the speed trial an instrument?  Fidelity, transfer share, spread and time, per task.

For each speed-ranked task, a learner-style file (the reference's own code under the task's
function name) is tried as it is and made exactly K times slower (the call repeated K times,
the last result returned).  A faithful instrument ranks it K times lower:
fidelity = (ratio₁ / ratio_K) / K = 1.  Also per task:

- transfer share: the in-window cost of a call that does nothing (a trusted function returning
  its first input: the clock's own overhead, median of 60 calls) over the reference's call;
- spread: how far five trials of the unchanged file stray from their median, and the same for
  its achieved GB/s (moved bytes over the fastest call);
- the trial's own time (median), its board ratio against its ratio.

Medians throughout; every ratio is against the reference timed in the same trial.  Not part of
the test suite.

    python -m bench.speed_fidelity [--trials 5] [--tasks softmax_rows,...]
"""

from __future__ import annotations

import argparse
import inspect
import math
import statistics
from dataclasses import dataclass

import torch

import graders.speed
from bot.jobs.job_spec import SpeedSpec
from bot.worker import peaks
from bot.worker.speed_trial import Roof, TrialOutcome, _off_the_job_core, fresh_inputs, run_trial
from graders.registry import registry
from sandbox import Zygote
from sandbox.turns import TensorShape, TurnSpec

#: reference -> (grader whose limits apply, the task's function name)
TASKS = {
    "softmax_rows": ("stable_softmax", "softmax"),
    "gelu_bias_eager": ("fused_pointwise", "fused_gelu_bias"),
    "attention_naive": ("attention", "attention"),
    "cumsum_mask": ("tensor_puzzles", "cumsum"),
    "decode_step": ("kv_cache_decode", "decode_step"),
}
CALLS = 60


@dataclass(frozen=True)
class Row:
    task: str
    fidelity: dict[int, float]
    share: float
    echo_us: float
    reference_ms: float
    spread: float
    gbs_spread: float
    trial_s: float
    board_vs_ratio: float


def learner_source(reference: str, function: str, k: int) -> str:
    """The reference's own code as the learner's ``function``, its call repeated ``k`` times."""
    source = inspect.getsource(graders.speed.load(reference))
    body = (
        f"\n\ndef {function}(*args):\n"
        f"    for _ in range({k - 1}):\n        reference(*args)\n"
        "    return reference(*args)\n"
    )
    return source + body


def echo_us(zygote: Zygote, reference: str, limits: object) -> tuple[float, float]:
    """(median µs of a do-nothing call, median ms of the reference's call) on one job each."""
    module = graders.speed.load(reference)
    sample = fresh_inputs(module)
    shapes = tuple(TensorShape(str(t.dtype).removeprefix("torch."), tuple(t.shape)) for t in sample)
    out_shape = module.reference(*sample).shape
    medians = []
    for source, function, expect in (
        ("def echo(*args):\n    return args[0]\n", "echo", shapes[0]),
        (inspect.getsource(module), "reference", TensorShape("float32", tuple(out_shape))),
    ):
        spec = TurnSpec(source, "bench.py", function, limits, "cpu", shapes)  # type: ignore[arg-type]
        out = torch.empty(expect.shape)
        times = []
        with zygote.turn(spec) as turn, _off_the_job_core():
            for _ in range(CALLS):
                inputs = fresh_inputs(module)
                timed = turn.call(
                    tuple((t.data_ptr(), t.numel() * t.element_size()) for t in inputs),
                    expect,
                    (out.data_ptr(), out.numel() * out.element_size()),
                    5.0,
                )
                assert timed.read, (timed, turn.over)
                times.append(timed.seconds)
        medians.append(statistics.median(times))
    return medians[0] * 1e6, medians[1] * 1e3


def ratio(outcome: TrialOutcome) -> float:
    if outcome.result is None:
        print(f"  not ranked: {outcome.reason}", flush=True)
        return math.nan
    return outcome.result.ratio


def measure(zygote: Zygote, reference: str, trials: int, roof: Roof) -> Row:
    grader, function = TASKS[reference]
    limits = registry()[grader].limits
    speed = SpeedSpec(function, reference)

    def trial(k: int) -> TrialOutcome:
        source = learner_source(reference, function, k)
        return run_trial(speed, source, "bench.py", zygote, limits, roof=roof)

    plain = [o for o in (trial(1) for _ in range(trials)) if o.result is not None]
    middle = statistics.median(ratio(o) for o in plain)
    print(f"  {reference}: ratios {[round(ratio(o), 3) for o in plain]}", flush=True)
    fidelity = {}
    for k in (2, 4):
        slowed = statistics.median(ratio(trial(k)) for _ in range(max(1, trials // 2)))
        fidelity[k] = middle / slowed / k
    gbs = [o.result.achieved_gbs or 0.0 for o in plain if o.result is not None]
    gbs_middle = statistics.median(gbs)
    echo, reference_ms = echo_us(zygote, reference, limits)
    return Row(
        task=reference,
        fidelity=fidelity,
        share=echo / 1e3 / reference_ms,
        echo_us=echo,
        reference_ms=reference_ms,
        spread=max(abs(ratio(o) - middle) / middle for o in plain),
        gbs_spread=max(abs(g - gbs_middle) / gbs_middle for g in gbs),
        trial_s=statistics.median(o.seconds for o in plain),
        board_vs_ratio=statistics.median(
            o.result.board_ratio / o.result.ratio
            for o in plain
            if o.result and o.result.board_ratio
        ),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--tasks", default=",".join(TASKS))
    args = parser.parse_args()
    measured = peaks.current()
    roof = Roof(measured.cache_gbs or measured.bandwidth_gbs, measured.gflops)
    print(f"roofline: {measured.describe()}; cache triad {measured.cache_gbs:.1f} GB/s")
    print(
        "| task | fidelity K=2 | K=4 | transfer share (do-nothing call / reference call) | "
        "spread of 5 trials | GB/s spread | trial s | board / ratio |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with Zygote() as zygote:
        zygote.partner().start()
        for reference in args.tasks.split(","):
            row = measure(zygote, reference, args.trials, roof)
            print(
                f"| {row.task} | {row.fidelity[2]:.2f} | {row.fidelity[4]:.2f} | "
                f"{row.share:.1%} ({row.echo_us:.0f} µs / {row.reference_ms:.2f} ms) | "
                f"±{row.spread:.1%} | ±{row.gbs_spread:.1%} | {row.trial_s:.2f} | "
                f"{row.board_vs_ratio:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
