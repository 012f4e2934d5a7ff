"""plan(): fresh inputs per seed, every shape class in both dtypes, the truth kept back."""

from __future__ import annotations

import re
from collections import Counter

import torch

from bot.sandbox.api import Call
from graders.matmul_cases import MAX_DIM, SHAPES
from graders.matmul_three_ways import MatmulThreeWays
from graders.tensors import from_raw, to_raw

FUNCTIONS = MatmulThreeWays.interface
LABEL = re.compile(r"^(?P<kind>[\w -]+?) (\d+)x(\d+) @ (\d+)x(\d+), (float32|float64)$")


def inputs(call: Call) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = (from_raw(raw) for raw in call.args)
    return a, b


def test_different_seeds_give_different_inputs() -> None:
    grader = MatmulThreeWays()
    first, second = grader.plan(1, "cpu"), grader.plan(2, "cpu")
    assert [c.args for c in first.calls] != [c.args for c in second.calls]
    assert not torch.equal(inputs(first.calls[0])[0], inputs(second.calls[0])[0])


def test_the_same_seed_gives_the_same_plan() -> None:
    grader = MatmulThreeWays()
    assert grader.plan(7, "cpu").calls == grader.plan(7, "cpu").calls


def test_every_function_gets_every_shape_class_in_both_dtypes() -> None:
    plan = MatmulThreeWays().plan(3, "cpu")
    assert len(plan.calls) == len(FUNCTIONS) * len(SHAPES) * 2
    seen: Counter[tuple[str, str, str]] = Counter()
    for call in plan.calls:
        match = LABEL.match(call.label)
        assert match, call.label
        seen[(call.function, match["kind"], match[6])] += 1
    dtypes = ("float32", "float64")
    assert set(seen) == {(f, k, d) for f in FUNCTIONS for k in SHAPES for d in dtypes}
    assert set(seen.values()) == {1}


def test_shapes_match_their_class_and_stay_small() -> None:
    for seed in range(20):
        for case in MatmulThreeWays().plan(seed, "cpu").expected["cases"]:
            c = case.case
            assert max(c.m, c.k, c.n) <= MAX_DIM
            expected = {
                "square": c.m == c.k == c.n > 1,
                "non-square": len({c.m, c.k, c.n}) == 3,
                "row result": c.m == 1 and c.k > 1 and c.n > 1,
                "column result": c.n == 1 and c.m > 1 and c.k > 1,
                "inner dim 1": c.k == 1 and c.m > 1 and c.n > 1,
                "1x1 result": c.m == c.n == 1 and c.k > 1,
            }
            assert expected[c.kind], c.label


def test_calls_carry_raw_inputs_and_the_truth_stays_in_the_plan() -> None:
    plan = MatmulThreeWays().plan(11, "cpu")
    for call, case in zip(plan.calls, plan.expected["cases"], strict=True):
        a, b = inputs(call)
        assert call.function == case.function and call.label == case.case.label
        assert a.dtype == b.dtype == case.case.dtype
        assert a.shape == (case.case.m, case.case.k) and b.shape == (case.case.k, case.case.n)
        assert torch.equal(a, case.a) and torch.equal(b, case.b)
        assert case.product.dtype == torch.float64
        torch.testing.assert_close(case.product, a.double() @ b.double())


def test_raw_tensor_round_trip_keeps_dtype_shape_and_values() -> None:
    for tensor in (
        torch.randn(3, 4, dtype=torch.float64),
        torch.arange(6, dtype=torch.int32).reshape(2, 3).T,  # not contiguous
        torch.zeros(0, 5),
        torch.tensor(2.5, dtype=torch.bfloat16),
    ):
        raw = to_raw(tensor)
        assert raw.shape == tuple(tensor.shape)
        back = from_raw(raw)
        assert back.dtype == tensor.dtype and torch.equal(back, tensor)
