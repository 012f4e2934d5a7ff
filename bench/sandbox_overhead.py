"""Per-job cost of the sandbox: a warm zygote against a fresh Python process per job.

Run from the repository root:  .venv/bin/python bench/sandbox_overhead.py [--jobs 50]

Both sides add two 64x64 float32 tensors; the numbers are the medians of the
time the trusted side waits for each verdict.  Jobs are spaced by ``--gap-s``
as on a real bot (some kernel costs, like cgroup moves, hide in back-to-back runs).

``--baseline-tree DIR`` measures the warm zygote of another checkout (e.g. a ``git worktree``
of an older commit) in the same run: rounds of jobs alternate between the two trees, each in
a fresh process, and the report gives both medians and their ratio.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.environ.get("BRRRBOT_BENCH_TREE", str(Path(__file__).resolve().parents[1])))

import torch

from sandbox import Zygote
from sandbox.api import Call, RawTensor, SandboxRequest

TREE = sys.path[0]
SOURCE = "def add(a, b):\n    return a + b\n"
BASELINE = "import torch; a = torch.ones(64, 64); b = a + a; print(b.sum().item())"


def _raw(tensor: torch.Tensor) -> RawTensor:
    data = ctypes.string_at(tensor.data_ptr(), tensor.numel() * tensor.element_size())
    return RawTensor("float32", tuple(tensor.shape), data)


def _summary(name: str, samples: list[float]) -> float:
    ordered = sorted(samples)
    median = statistics.median(ordered)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    print(f"{name:<34} median {median * 1e3:8.1f} ms   p90 {p90 * 1e3:8.1f} ms   n={len(samples)}")
    return median


def bench_zygote(jobs: int, gap_s: float, quiet: bool = False) -> tuple[list[float], list[float]]:
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    request = SandboxRequest(SOURCE, "submission.py", (Call("add", (_raw(a), _raw(b)), "64x64"),))
    latencies, walls = [], []
    started = time.perf_counter()
    with Zygote() as zygote:
        if not quiet:
            start_s = time.perf_counter() - started
            print(f"zygote start (import torch, warm-up, probe): {start_s:.2f} s")
            print(f"sandbox mode: {zygote.mode}")
        for _ in range(3):
            zygote.run(request)
        for _ in range(jobs):
            time.sleep(gap_s)
            began = time.perf_counter()
            result = zygote.run(request)
            latencies.append(time.perf_counter() - began)
            walls.append(result.wall_s)
            assert result.status == "ok", result
    return latencies, walls


def bench_fresh_process(jobs: int) -> list[float]:
    samples = []
    for _ in range(jobs):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", BASELINE], check=True, capture_output=True)
        samples.append(time.perf_counter() - began)
    return samples


def _round(tree: str, jobs: int, gap_s: float) -> list[float]:
    """One round of ``jobs`` warm-zygote jobs of ``tree``'s sandbox, in a fresh process."""
    command = [sys.executable, __file__, "--samples", "--jobs", str(jobs), "--gap-s", str(gap_s)]
    env = {**os.environ, "BRRRBOT_BENCH_TREE": tree}
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1])


def compare(baseline: str, rounds: int, jobs: int, gap_s: float) -> None:
    here: list[float] = []
    there: list[float] = []
    for _ in range(rounds):
        here += _round(TREE, jobs, gap_s)
        there += _round(str(Path(baseline).resolve()), jobs, gap_s)
    new = _summary(f"warm zygote, per job: {Path(TREE).name}", here)
    old = _summary(f"warm zygote, per job: {Path(baseline).name}", there)
    print(f"ratio {Path(TREE).name} / {Path(baseline).name}: {new / old:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50, help="jobs through the warm zygote")
    parser.add_argument("--baseline-jobs", type=int, default=10, help="fresh processes")
    parser.add_argument("--gap-s", type=float, default=0.05, help="idle time between jobs")
    parser.add_argument("--baseline-tree", help="another checkout to measure in the same run")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds per tree")
    parser.add_argument("--samples", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.samples:
        print(json.dumps(bench_zygote(args.jobs, args.gap_s, quiet=True)[0]))
        return
    if args.baseline_tree:
        compare(args.baseline_tree, args.rounds, args.jobs, args.gap_s)
        return
    latencies, walls = bench_zygote(args.jobs, args.gap_s)
    fresh = bench_fresh_process(args.baseline_jobs)
    warm = _summary("warm zygote, per job (client)", latencies)
    _summary("  of which fork -> job exit (zygote)", walls)
    cold = _summary("fresh python + import torch per job", fresh)
    print(f"speed-up: {cold / warm:.0f}x")


if __name__ == "__main__":
    main()
