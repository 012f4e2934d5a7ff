"""What drawing the roofline picture costs the process that draws it: time and memory, against
the ``/profile`` card (``bot.presentation.images.profile_card``) measured in the same run.

Run from the repository root:  .venv/bin/python bench/roofline_image.py [--draws 50]

The issue's budget: a drawing adds at most 50 ms and 20 MB to the process that draws.  The
measurement runs in a fresh child process that has loaded what the bot has already loaded
(Pillow, the images module and its font) and nothing of the roofline; it then

* draws the profile card ``--draws`` times, so that the baseline's own peak is reached;
* imports ``bot.presentation.roofline_image`` (timed) and draws a CPU and a GPU roofline once
  each, cold (timed: fonts at new sizes load here);
* draws both charts ``--draws`` times each, reading the process's peak resident size (VmHWM)
  before and after: what the roofline adds to the peak is the difference;
* draws the card and the two charts once each under ``tracemalloc`` (Python's own allocations
  only: Pillow's pixel buffers are C allocations, which only the resident size sees);
* times ``--draws`` rounds of card, CPU chart, GPU chart, interleaved, so a busy machine slows
  all three alike.

It prints a Markdown table of medians and 90th percentiles with the ratio to the card.  Not
part of the test suite (``tests/presentation/test_roofline_image.py`` holds a looser bound).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUDGET_MS = 50
BUDGET_MB = 20


def _high_water() -> int:
    """The process's peak resident size so far, in bytes (Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _resident() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _traced_peak(call) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def child(draws: int) -> dict[str, object]:
    """The measurement itself, in a process that has loaded only what the bot has."""
    from bot.presentation.images import profile_card
    from bot.progress.levels import progress
    from bot.progress.profile import Profile
    from bot.progress.streaks import Streak

    profile = Profile(1, 12_345, progress(12_345), 4, 350, Streak(3, 9), ("q/t",), ("q",))

    def card() -> bytes:
        return profile_card(profile, "Ada Lovelace")

    card()
    for _ in range(draws):
        card()
    rss_before = _resident()
    hwm_before = _high_water()

    started = time.perf_counter()
    from bot.presentation.roofline_image import PlotPoint, RooflineChart, roofline_png

    import_s = time.perf_counter() - started
    cpu_chart = RooflineChart(
        17.2,
        150.0,
        (PlotPoint("your code", 0.625, 1.9), PlotPoint("reference", 0.625, 1.6)),
        "fused-gelu on AMD EPYC 7B13",
    )
    gpu_chart = RooflineChart(
        4800.0,
        60000.0,
        (PlotPoint("your code", 1.5, 5200.0), PlotPoint("reference", 0.9, 2100.0)),
        "fused-gelu on NVIDIA H200",
    )

    def cpu() -> bytes:
        return roofline_png(cpu_chart)

    def gpu() -> bytes:
        return roofline_png(gpu_chart)

    cold = {"cpu": _timed(cpu), "gpu": _timed(gpu)}
    for _ in range(draws):
        cpu()
        gpu()
    hwm_after = _high_water()
    rss_after = _resident()

    traced = {"card": _traced_peak(card), "cpu": _traced_peak(cpu), "gpu": _traced_peak(gpu)}
    times: dict[str, list[float]] = {"card": [], "cpu": [], "gpu": []}
    for _ in range(draws):
        for name, call in (("card", card), ("cpu", cpu), ("gpu", gpu)):
            times[name].append(_timed(call))
    return {
        "import_s": import_s,
        "cold_s": cold,
        "times_s": times,
        "traced_peak": traced,
        "hwm_added": hwm_after - hwm_before,
        "rss_added": rss_after - rss_before,
        "hwm_before": hwm_before,
        "png_bytes": {"card": len(card()), "cpu": len(cpu()), "gpu": len(gpu())},
    }


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=50, help="draws of each picture")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.draws)))
        return
    # bytecode cached in a folder of its own (as an installed bot has it), even where the
    # environment turns writing it off: the import is timed, not the compiling
    cache = tempfile.mkdtemp(prefix="roofline-bench-")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONPYCACHEPREFIX": cache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(
        [sys.executable, "-c", "import bot.presentation.roofline_image"], env=env, check=True
    )
    done = subprocess.run(
        [sys.executable, __file__, "--child", "--draws", str(args.draws)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    shutil.rmtree(cache, ignore_errors=True)
    result = json.loads(done.stdout)
    times = result["times_s"]
    card = statistics.median(times["card"])
    mb = 2**20
    print(
        f"{args.draws} draws each, interleaved; the child's peak RSS before the roofline: "
        f"{result['hwm_before'] / mb:.1f} MB\n"
    )
    print(
        "| picture | median (ms) | p90 (ms) | × the card | cold first draw (ms) "
        "| tracemalloc peak (MB) | PNG (kB) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, label in (
        ("card", "profile card (baseline)"),
        ("cpu", "roofline, CPU"),
        ("gpu", "roofline, GPU"),
    ):
        median = statistics.median(times[name])
        cold = result["cold_s"].get(name)
        print(
            f"| {label} | {median * 1e3:.1f} | {_quantile(times[name], 0.9) * 1e3:.1f} "
            f"| {median / card:.2f} | {'-' if cold is None else f'{cold * 1e3:.1f}'} "
            f"| {result['traced_peak'][name] / mb:.2f} | {result['png_bytes'][name] / 1e3:.0f} |"
        )
    worst = max(statistics.median(times["cpu"]), statistics.median(times["gpu"]))
    print(
        f"\nimport of bot.presentation.roofline_image (bytecode cached): "
        f"{result['import_s'] * 1e3:.1f} ms\n"
        f"peak RSS added by {2 * args.draws + 2} roofline draws (VmHWM after - before): "
        f"{result['hwm_added'] / mb:.1f} MB; RSS still held after them: "
        f"{result['rss_added'] / mb:.1f} MB\n"
        f"budget: {BUDGET_MS} ms and {BUDGET_MB} MB per drawing -> "
        f"time {'within' if worst * 1e3 <= BUDGET_MS else 'OVER'}, memory "
        f"{'within' if result['hwm_added'] <= BUDGET_MB * mb else 'OVER'}"
    )


if __name__ == "__main__":
    main()
