"""Every build grader against our catalogue, over 200 seeds: each correct style passes on
every seed, each common mistake fails on every seed naming its likely cause, and the fixed
cases alone (no draw at all) already fail every mistake.

Plan and judge run here as in a worker; the catalogue's functions run in this process
instead of the sandbox (see ``in_process``), which makes 200 seeds take seconds.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator

import pytest
import torch

from graders import REGISTRY, load_grader
from graders.base import Verdict
from graders.cases import CaseGrader
from tests.graders.catalogue import Catalogue, catalogue_for
from tests.graders.in_process import load, run_plan, same_functions

_DRAW = random.Random(20261201)
SEEDS = tuple(_DRAW.getrandbits(62) for _ in range(200))
MIN_MISTAKES = 5
BUILD_GRADERS = sorted(REGISTRY)


@pytest.fixture(autouse=True)
def _one_thread(one_thread: None) -> Iterator[None]:
    yield


def _check_message(verdict: Verdict, function: str) -> tuple[bool, str]:
    (check,) = [c for c in verdict.checks if c.name == f"{function}: correct results"]
    return check.passed, check.message


def _repeats(verdict: Verdict) -> bool:
    """Whether a line of the summary is also in a check, or a check's text in the summary."""
    lines = [line for line in verdict.feedback.splitlines() if line.strip()]
    return any(
        line in c.message or c.message in verdict.feedback for c in verdict.checks for line in lines
    )


def _problems(catalogue: Catalogue, seeds: tuple[int, ...]) -> list[str]:
    """Every way the grader disagrees with the catalogue on these seeds, by entry."""
    grader = load_grader(catalogue.grader)
    correct = [("reference", catalogue.source())]
    correct += [(s.name, catalogue.source(s.code)) for s in catalogue.styles]
    styles = [(name, source, load(source)) for name, source in correct]
    mistakes = [(m, catalogue.source(m.code)) for m in catalogue.mistakes]
    mistakes_loaded = [(m, source, load(source)) for m, source in mistakes]
    reference = styles[0][2]
    variants = [module for *_, module in styles + mistakes_loaded]
    same = {id(m): same_functions(reference, m, grader.interface) for m in variants}
    found: dict[str, list[int]] = defaultdict(list)
    for seed in seeds:
        plan = grader.plan(seed, "cpu")
        answers = run_plan(reference, plan)
        results = {  # a variant runs only the functions it changed
            id(m): run_plan(m, plan, reuse=answers, same=same[id(m)]) for m in variants
        }
        for name, source, module in styles:
            verdict = grader.judge(catalogue.task, plan, results[id(module)], source)
            if verdict.status != "passed":
                failing = [c.message for c in verdict.checks if not c.passed]
                found[f"correct style {name!r} failed: {failing[0][:300]}"].append(seed)
        for mistake, source, module in mistakes_loaded:
            verdict = grader.judge(catalogue.task, plan, results[id(module)], source)
            passed, message = _check_message(verdict, mistake.function)
            if _repeats(verdict):
                found[f"mistake {mistake.name!r}: the summary repeats a check"].append(seed)
            if passed:
                found[f"mistake {mistake.name!r} passed"].append(seed)
            elif "Likely cause: " not in message or mistake.cause not in message:
                found[f"mistake {mistake.name!r} not named: {message[-300:]}"].append(seed)
    return [f"{what} on {len(s)} of {len(seeds)} seeds, e.g. {s[:3]}" for what, s in found.items()]


@pytest.mark.parametrize("name", BUILD_GRADERS)
def test_each_build_grader_lists_its_common_mistakes(name: str) -> None:
    catalogue = catalogue_for(name)
    assert catalogue.task.count("/") == 1
    assert len(catalogue.mistakes) >= MIN_MISTAKES, [m.name for m in catalogue.mistakes]
    assert catalogue.styles, "at least one correct style besides the reference"
    functions = set(load_grader(name).interface)
    assert {m.function for m in catalogue.mistakes} <= functions


@pytest.mark.parametrize("name", BUILD_GRADERS)
def test_mistakes_fail_and_styles_pass_on_every_seed(name: str) -> None:
    assert _problems(catalogue_for(name), SEEDS) == []


@pytest.mark.parametrize("name", BUILD_GRADERS)
def test_fixed_cases_alone_fail_every_mistake(name: str) -> None:
    """Randomness only adds coverage: the cases in every plan already separate each mistake."""
    catalogue = catalogue_for(name)
    grader = load_grader(name)
    assert isinstance(grader, CaseGrader)
    plan = grader.plan_of(grader.fixed_cases("cpu"))
    reference = grader.judge(
        catalogue.task, plan, run_plan(load(catalogue.source()), plan), catalogue.source()
    )
    assert reference.status == "passed", reference.checks
    for mistake in catalogue.mistakes:
        source = catalogue.source(mistake.code)
        verdict = grader.judge(catalogue.task, plan, run_plan(load(source), plan), source)
        passed, message = _check_message(verdict, mistake.function)
        assert not passed, f"the fixed cases miss {mistake.name!r}"
        assert mistake.cause in message, (mistake.name, message)


def test_the_sweep_is_deterministic_and_distinct() -> None:
    assert len(set(SEEDS)) == len(SEEDS) == 200
    assert torch.get_num_threads() == 1
