"""Every build grader against our catalogue, over 200 seeds: each correct style passes on
every seed, each common mistake fails on every seed naming its likely cause, and the fixed
cases alone (no draw at all) already fail every mistake.

Plan and judge run here as in a worker; the catalogue's functions run in this process
instead of the sandbox (see ``in_process``), which makes 200 seeds take seconds.  The seeds
are swept side by side in processes of their own, one per core (``tests.graders.sweep``).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator

import pytest
import torch

from graders.base import Plan
from graders.cases import CaseGrader
from graders.registry import load_grader, registry
from graders.tensors import from_raw, to_raw
from sandbox.api import Call
from tests.graders.catalogue import CorrectStyle, catalogue_for
from tests.graders.in_process import CallMemo, load, run_plan
from tests.graders.sweep import Sweeper, check_message, sweep

_DRAW = random.Random(20261201)
SEEDS = tuple(_DRAW.getrandbits(62) for _ in range(200))
MIN_MISTAKES = 5
BUILD_GRADERS = sorted(registry())


@pytest.fixture(autouse=True)
def _one_thread(one_thread: None) -> Iterator[None]:
    yield


@pytest.fixture(scope="module")
def sweeper() -> Iterator[Sweeper]:
    with Sweeper() as running:
        yield running


def _problems(sweeper: Sweeper, name: str, seeds: tuple[int, ...]) -> list[str]:
    """Every way the grader disagrees with its catalogue on these seeds, by entry."""
    found = sweeper.sweep(catalogue_for(name), seeds)
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
def test_mistakes_fail_and_styles_pass_on_every_seed(sweeper: Sweeper, name: str) -> None:
    assert _problems(sweeper, name, SEEDS) == []


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
        passed, message = check_message(verdict, mistake.function)
        assert not passed, f"the fixed cases miss {mistake.name!r}"
        assert mistake.cause in message, (mistake.name, message)


def test_the_sweep_is_deterministic_and_distinct() -> None:
    assert len(set(SEEDS)) == len(SEEDS) == 200
    assert torch.get_num_threads() == 1


def test_the_processes_find_what_one_process_finds(sweeper: Sweeper) -> None:
    """Split into runs and swept by the helper processes (where this run may use more than
    one core), a sweep still reports every finding on every seed, in seed order: a catalogue
    with a mistake that is no mistake and a style that is one."""
    catalogue = catalogue_for("bpe_merge")
    slip = catalogue.mistakes[0]
    planted = dataclasses.replace(
        catalogue,
        styles=(CorrectStyle(f"planted: {slip.name}", slip.code),),
        mistakes=(dataclasses.replace(slip, name="planted: no mistake", code=""),),
    )
    seeds = SEEDS[:10]
    found = sweeper.sweep(planted, seeds, share=False)
    assert found == sweep(planted, seeds)
    assert found["mistake 'planted: no mistake' passed"] == list(seeds)
    failed = [seen for what, seen in found.items() if what.startswith("correct style 'planted")]
    assert sorted(seed for seen in failed for seed in seen) == sorted(seeds), found


def test_a_call_that_is_the_same_object_in_every_plan_runs_once_per_module() -> None:
    """A grader's fixed call built once (speculative-accept's 100,000 sequences) is run
    once per module by a sweep; a call built afresh for each plan is run every time."""
    source = "CALLS = []\n\ndef f(x):\n    CALLS.append(x.tolist())\n    return x + 1\n"
    first, second = load(source), load(source)
    shared = Call("f", (to_raw(torch.ones(2)),), "the same in every plan")
    memo = CallMemo({id(shared): shared})
    for _ in range(3):
        for module in (first, second):
            fresh = Call("f", (to_raw(torch.zeros(2)),), "drawn for this plan")
            result = run_plan(module, Plan((fresh, shared)), memo=memo)
            assert [from_raw(c.tensor).tolist() for c in result.calls if c.tensor] == [
                [1.0, 1.0],
                [2.0, 2.0],
            ]
    for module in (first, second):
        assert module.CALLS == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
