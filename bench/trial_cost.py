"""What a speed trial adds to a cold ``brrrbot grade``: each speed-ranked task graded with its
trial and with ``--no-trial``, alternating, medians of the whole command's wall time.

Run from the repository root:  .venv/bin/python bench/trial_cost.py [--runs 5]

The issue's bound is 2×: a speed-ranked grade may take at most twice the same command with the
trial skipped.  Not part of the test suite.
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
}


def _grade(folder: Path, solution: Path, task: str, *extra: str) -> float:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
    env["PYTHONPATH"] = str(REPO)
    command = [sys.executable, "-m", "bot", "grade", str(solution), "--task", task, *extra]
    started = time.perf_counter()
    subprocess.run(command, cwd=folder, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each kind")
    args = parser.parse_args()
    print("| task | with the trial (s) | --no-trial (s) | ratio |")
    print("| --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as folder:
        for task, solution in TASKS.items():
            timed: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.runs):
                timed[True].append(_grade(Path(folder), solution, task))
                timed[False].append(_grade(Path(folder), solution, task, "--no-trial"))
            with_trial, without = (statistics.median(timed[k]) for k in (True, False))
            print(f"| {task} | {with_trial:.2f} | {without:.2f} | {with_trial / without:.2f} |")


if __name__ == "__main__":
    main()
