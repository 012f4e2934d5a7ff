"""Speed trials of honest fast and slow solutions, five times each, per speed-ranked task.

Prints, per solution, the five ratios reference/learner (each the median of a trial's pairs timed by
the worker's clock), their median and how far the five spread around it, the trial's own
within-run spread, and the host's measured roofline.  Not part of the test suite.

    python -m bench.speed_trials [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bot.jobs.job_spec import SpeedSpec
from bot.worker import peaks
from bot.worker.speed_trial import run_trial
from graders.registry import registry
from sandbox import Zygote

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).parent / "speed_solutions"
FORGERIES = ROOT / "tests" / "grading" / "speed_forgeries"
ROOFLINE = ROOT / "tests" / "graders" / "solutions" / "roofline"
ATTENTION = ROOT / "tests" / "graders" / "solutions" / "transformer-internals"

#: task -> (grader, speed spec, [(label, file)])
TASKS = {
    "transformer-internals/stable-softmax": (
        "stable_softmax",
        SpeedSpec("softmax", "softmax_rows"),
        [
            ("library softmax", FORGERIES / "honest.py"),
            ("Python loop", FORGERIES / "python_loop.py"),
        ],
    ),
    "transformer-internals/attention-from-scratch": (
        "attention",
        SpeedSpec("attention", "attention_naive"),
        [
            ("baddbmm, in place", HERE / "attention_baddbmm.py"),
            ("textbook", ATTENTION / "attention_correct.py"),
            ("Python loop over queries", HERE / "attention_loop.py"),
        ],
    ),
    "roofline/fused-gelu": (
        "fused_pointwise",
        SpeedSpec("fused_gelu_bias", "gelu_bias_eager"),
        [
            ("fused in place", ROOFLINE / "fused_inplace.py"),
            ("eager chain", ROOFLINE / "correct.py"),
        ],
    ),
    "tensor-puzzles/broadcasting-drills (cumsum)": (
        "tensor_puzzles",
        SpeedSpec("cumsum", "cumsum_mask"),
        [
            ("triangular matmul", HERE / "cumsum_matmul.py"),
            ("broadcast mask", HERE / "cumsum_mask.py"),
            ("Python loop", HERE / "cumsum_loop.py"),
        ],
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--task", help="only tasks whose name contains this")
    args = parser.parse_args()
    print(f"roofline: {peaks.current().describe()}")
    with Zygote() as zygote:
        zygote.start()
        for task, (grader, speed, solutions) in TASKS.items():
            if args.task and args.task not in task:
                continue
            print(f"\n{task} (reference {speed.reference})")
            for label, path in solutions:
                ratios, spreads, gbs, started = [], [], [], time.perf_counter()
                for _ in range(args.runs):
                    outcome = run_trial(
                        speed, path.read_text(), path.name, zygote, registry()[grader].limits
                    )
                    if outcome.result is None:
                        print(f"  {label}: not ranked: {outcome.reason}")
                        break
                    ratios.append(outcome.result.ratio)
                    spreads.append(outcome.result.spread)
                    if outcome.result.achieved_gbs is not None:
                        gbs.append(outcome.result.achieved_gbs)
                if not ratios:
                    continue
                middle = statistics.median(ratios)
                apart = max(abs(r - middle) / middle for r in ratios)
                line = (
                    f"  {label:28} ratios {' '.join(f'{r:.3f}' for r in ratios)}  "
                    f"median {middle:.3f}, runs within ±{apart:.0%}, in-trial spread "
                    f"{statistics.median(spreads):.2f}"
                )
                if gbs:
                    line += f", {statistics.median(gbs):.2f} GB/s"
                per_trial = (time.perf_counter() - started) / len(ratios)
                print(f"{line}  ({per_trial:.1f} s a trial)")


if __name__ == "__main__":
    main()
