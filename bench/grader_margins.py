"""How far from each grader's tolerance correct formulations and common mistakes land.

Run: .venv/bin/python bench/grader_margins.py [--seeds 200] [GRADER ...]

For every case of every plan, ``error_ratio`` is the largest |got - want| / (atol + rtol *
scale): at most 1 passes.  Per grader this reports, over the seeds:
- correct: the worst ratio any correct formulation of the catalogue reached (reference and
  styles), with its median over seeds: the tolerance's headroom is 1 / worst;
- each common mistake: the smallest, over seeds, of its largest ratio on the cases of the
  function it breaks (inf: it fails on shape, dtype or an integer entry), so the mistake's
  distance above the tolerance on its luckiest draw.
A fair tolerance has worst-correct well below 1 and every mistake well above it.  Not part
of the test suite's pass/fail (``tests/graders/test_catalogue.py`` is).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from graders.comparison import Case, error_ratio  # noqa: E402
from graders.registry import load_grader, registry  # noqa: E402
from graders.tensors import from_raw  # noqa: E402
from tests.graders.catalogue import catalogue_for  # noqa: E402
from tests.graders.in_process import load, run_plan  # noqa: E402


def _ratios(cases: tuple[Case, ...], result: object, function: str | None = None) -> float:
    worst = 0.0
    for case, got in zip(cases, result.calls, strict=True):  # type: ignore[attr-defined]
        if function is not None and case.function != function:
            continue
        if got.tensor is None:
            return float("inf")
        worst = max(worst, error_ratio(case, from_raw(got.tensor)))
    return worst


def margins(name: str, seeds: list[int]) -> None:
    catalogue = catalogue_for(name)
    grader = load_grader(name)
    correct = [("reference", load(catalogue.source()))]
    correct += [(s.name, load(catalogue.source(s.code))) for s in catalogue.styles]
    mistakes = [(m, load(catalogue.source(m.code))) for m in catalogue.mistakes]
    worst_correct: dict[str, list[float]] = {n: [] for n, _ in correct}
    smallest: dict[str, list[float]] = {m.name: [] for m, _ in mistakes}
    for seed in seeds:
        plan = grader.plan(seed, "cpu")
        cases = plan.expected["cases"]
        for n, module in correct:
            worst_correct[n].append(_ratios(cases, run_plan(module, plan)))
        for m, module in mistakes:
            smallest[m.name].append(_ratios(cases, run_plan(module, plan), m.function))
    print(f"\n{name} ({catalogue.task}), {len(seeds)} seeds")
    for n, values in worst_correct.items():
        middle = statistics.median(values)
        print(f"  correct  {n:<44} worst {max(values):9.3g}  median {middle:9.3g}")
    for n, values in smallest.items():
        middle = statistics.median(values)
        print(f"  mistake  {n:<44} least {min(values):9.3g}  median {middle:9.3g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("graders", nargs="*", default=sorted(registry()))
    args = parser.parse_args()
    torch.set_num_threads(1)
    draw = random.Random(7)
    seeds = [draw.getrandbits(62) for _ in range(args.seeds)]
    for name in args.graders:
        margins(name, seeds)


if __name__ == "__main__":
    main()
