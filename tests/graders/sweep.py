"""A grader swept over many seeds against our catalogue (``tests.graders.catalogue``), for
tests/graders/test_catalogue.py.

Each seed is planned, run and judged as in a worker; the catalogue's functions run in this
process instead of the sandbox (``in_process``).  Seeds do not depend on one another, so
``Sweeper`` splits them into runs of consecutive seeds that this process and helper processes
sweep side by side, one process per core this run may use, and merges what they find in seed
order: the same findings, in the same order, as one process sweeping every seed.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cache
from types import ModuleType

import torch

from graders.base import Grader, Verdict
from graders.registry import load_grader
from tests.graders.catalogue import Catalogue, CommonMistake
from tests.graders.in_process import CallMemo, load, run_plan, same_functions

#: the most processes a sweep uses: each holds its own torch
MAX_PROCESSES = 4
#: runs per process, so that none waits long for the last run of another
RUNS_PER_PROCESS = 8

#: what went wrong -> the seeds it went wrong on, in seed order
Findings = dict[str, list[int]]


def check_message(verdict: Verdict, function: str) -> tuple[bool, str]:
    """Whether ``function``'s correct-results check passed, and its message."""
    (check,) = [c for c in verdict.checks if c.name == f"{function}: correct results"]
    return check.passed, check.message


def repeats(verdict: Verdict) -> bool:
    """Whether a line of the summary is also in a check, or a check's text in the summary."""
    lines = [line for line in verdict.feedback.splitlines() if line.strip()]
    return any(
        line in c.message or c.message in verdict.feedback for c in verdict.checks for line in lines
    )


@dataclass(frozen=True)
class _Entries:
    """A catalogue loaded for sweeping: every entry as a module, run once per process."""

    grader: Grader
    styles: tuple[tuple[str, str, ModuleType], ...]  # the reference first
    mistakes: tuple[tuple[CommonMistake, str, ModuleType], ...]
    same: dict[int, frozenset[str]]  # by id(module): the functions it shares with the reference
    #: the first plan's calls, and results of the later plans' calls that are one of them
    memo: CallMemo


@cache
def _entries(catalogue: Catalogue) -> _Entries:
    grader = load_grader(catalogue.grader)
    correct = [("reference", catalogue.source())]
    correct += [(s.name, catalogue.source(s.code)) for s in catalogue.styles]
    styles = tuple((entry, source, load(source)) for entry, source in correct)
    slips = [(m, catalogue.source(m.code)) for m in catalogue.mistakes]
    mistakes = tuple((m, source, load(source)) for m, source in slips)
    reference = styles[0][2]
    variants = [module for *_, module in styles + mistakes]
    same = {id(m): same_functions(reference, m, grader.interface) for m in variants}
    return _Entries(grader, styles, mistakes, same, CallMemo({}))


def sweep(catalogue: Catalogue, seeds: Sequence[int]) -> Findings:
    """Every way the catalogue's grader disagrees with it on ``seeds``, in this process."""
    entries = _entries(catalogue)
    grader = entries.grader
    reference = entries.styles[0][2]
    variants = [module for *_, module in entries.styles + entries.mistakes]
    found: Findings = defaultdict(list)
    memo = entries.memo
    for seed in seeds:
        plan = grader.plan(seed, "cpu")
        if not memo.calls:  # a later plan's call that is one of these is run once per module
            memo.calls.update((id(call), call) for call in plan.calls)
        answers = run_plan(reference, plan, memo=memo)
        results = {  # a variant runs only the functions it changed
            id(m): run_plan(m, plan, reuse=answers, same=entries.same[id(m)], memo=memo)
            for m in variants
        }
        for entry, source, module in entries.styles:
            verdict = grader.judge(catalogue.task, plan, results[id(module)], source)
            if verdict.status != "passed":
                failing = [c.message for c in verdict.checks if not c.passed]
                found[f"correct style {entry!r} failed: {failing[0][:300]}"].append(seed)
        for mistake, source, module in entries.mistakes:
            verdict = grader.judge(catalogue.task, plan, results[id(module)], source)
            passed, message = check_message(verdict, mistake.function)
            if repeats(verdict):
                found[f"mistake {mistake.name!r}: the summary repeats a check"].append(seed)
            if passed:
                found[f"mistake {mistake.name!r} passed"].append(seed)
            elif "Likely cause: " not in message or mistake.cause not in message:
                found[f"mistake {mistake.name!r} not named: {message[-300:]}"].append(seed)
    return dict(found)


def _one_thread() -> None:
    """As in the sandbox, and as the test process sweeps (see the ``one_thread`` fixture)."""
    torch.set_num_threads(1)


class Sweeper:
    """Sweeps with every core this run may use (up to ``MAX_PROCESSES``): this process and
    helper processes of its own, one per further core.  A context manager: the helpers start
    with the first sweep and stop at exit."""

    def __init__(self, processes: int | None = None) -> None:
        cores = len(os.sched_getaffinity(0))
        self.processes = max(1, min(MAX_PROCESSES, cores) if processes is None else processes)
        self._helpers: ProcessPoolExecutor | None = None

    def __enter__(self) -> Sweeper:
        if self.processes > 1:
            # spawned, not forked: this process may hold threads (torch's, the event loop's)
            self._helpers = ProcessPoolExecutor(
                self.processes - 1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_one_thread,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._helpers is not None:
            self._helpers.shutdown(cancel_futures=True)

    def sweep(self, catalogue: Catalogue, seeds: Sequence[int], *, share: bool = True) -> Findings:
        """``sweep(catalogue, seeds)`` in runs of consecutive seeds, merged in seed order.

        The helpers take the runs from the first on, and (unless ``share`` is False, where
        there are helpers) this process from the last back each run no helper has begun, so
        that all finish at about the same time (this one starting while the helpers still
        import torch).
        """
        runs = max(1, min(len(seeds), self.processes * RUNS_PER_PROCESS))
        size = max(1, -(-len(seeds) // runs))
        chunks = [list(seeds[i : i + size]) for i in range(0, len(seeds), size)]
        helpers = self._helpers
        futures = [helpers.submit(sweep, catalogue, chunk) for chunk in chunks] if helpers else []
        here: dict[int, Findings] = {}
        for i in reversed(range(len(chunks))):
            if futures and (not share or not futures[i].cancel()):
                break  # a helper has it, and every run before it
            here[i] = sweep(catalogue, chunks[i])
        found: Findings = defaultdict(list)
        for i in range(len(chunks)):  # in seed order
            for what, where in (here[i] if i in here else futures[i].result()).items():
                found[what].extend(where)
        return dict(found)
