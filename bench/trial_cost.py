"""What a speed trial adds to a cold ``brrrbot grade``, and what ``--profile`` adds to that:
each speed-ranked task graded with its trial, with ``--no-trial`` and with ``--profile`` (the
trial, the profile and the roofline picture), in turns, medians of the whole command's wall time.

Run from the repository root:  .venv/bin/python bench/trial_cost.py [--runs 5]

The bound is 2×: a speed-ranked grade may take at most twice the same command with the trial
skipped; the profile must fit inside the trial's budget.  Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "tests" / "graders" / "solutions"
TASKS = {
    "transformer-internals/stable-softmax": SOLUTIONS / "transformer-internals/softmax_correct.py",
    "transformer-internals/attention-from-scratch": (
        SOLUTIONS / "transformer-internals/attention_correct.py"
    ),
    "roofline/fused-gelu": SOLUTIONS / "roofline/correct.py",
    "tensor-puzzles/broadcasting-drills": SOLUTIONS / "tensor-puzzles/correct.py",
    "inference-engine/kv-cache-decode": SOLUTIONS / "inference-engine/kv_decode_correct.py",
}


def _grade(folder: Path, solution: Path, task: str, *extra: str) -> float:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
    env["PYTHONPATH"] = str(REPO)
    copy = folder / solution.name  # --profile writes its picture beside the file graded
    copy.write_bytes(solution.read_bytes())
    command = [sys.executable, "-m", "bot", "grade", str(copy), "--task", task, *extra]
    started = time.perf_counter()
    subprocess.run(command, cwd=folder, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each kind")
    args = parser.parse_args()
    print(
        "| task | with the trial (s) | --no-trial (s) | ratio | --profile (s) "
        "| the profile adds (s) |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    kinds = {"trial": (), "none": ("--no-trial",), "profile": ("--profile",)}
    with tempfile.TemporaryDirectory() as folder:
        for task, solution in TASKS.items():
            timed: dict[str, list[float]] = {kind: [] for kind in kinds}
            for _ in range(args.runs):
                for kind, extra in kinds.items():
                    timed[kind].append(_grade(Path(folder), solution, task, *extra))
            trial, none, profile = (statistics.median(timed[kind]) for kind in kinds)
            print(
                f"| {task} | {trial:.2f} | {none:.2f} | {trial / none:.2f} | {profile:.2f} "
                f"| {profile - trial:.2f} |"
            )


if __name__ == "__main__":
    main()
