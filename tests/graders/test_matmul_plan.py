"""plan(): the fixed cases in every plan, fresh inputs per seed for every shape class in
both dtypes, one recorded call per function, the truth kept back."""

from __future__ import annotations

import re
from collections import Counter

import torch

from graders.comparison import Case
from graders.tasks.matmul_three_ways import MAX_DIM, SHAPES, MatmulThreeWays
from graders.tensors import from_raw, to_raw
from sandbox.api import Call

FUNCTIONS = MatmulThreeWays.interface
LABEL = re.compile(r"^(?P<kind>[\w -]+?) (\d+)x(\d+) @ (\d+)x(\d+), (?P<dtype>float32|float64)$")


def inputs(call: Call) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = (from_raw(raw) for raw in call.args)
    return a, b


def cases(seed: int) -> tuple[Case, ...]:
    return MatmulThreeWays().plan(seed, "cpu").expected["cases"]


def test_different_seeds_give_different_inputs() -> None:
    grader = MatmulThreeWays()
    first, second = grader.plan(1, "cpu"), grader.plan(2, "cpu")
    assert [c.args for c in first.calls] != [c.args for c in second.calls]
    assert first.seed == 1 and second.seed == 2


def test_the_same_seed_gives_the_same_plan() -> None:
    grader = MatmulThreeWays()
    assert grader.plan(7, "cpu").calls == grader.plan(7, "cpu").calls


def test_the_fixed_cases_are_in_every_plan() -> None:
    fixed = [[(c.label, c.args) for c in cases(seed) if not c.drawn] for seed in (3, 4)]
    assert fixed[0] and [label for label, _ in fixed[0]] == [label for label, _ in fixed[1]]
    for (_, first), (_, second) in zip(*fixed, strict=True):
        assert all(torch.equal(x, y) for x, y in zip(first, second, strict=True))
    kinds = {c.label.split(" ")[0] for c in cases(3) if not c.drawn}
    assert "square" in kinds  # where B @ A, the transpose and A * B have the right shape


def test_every_function_gets_every_shape_class_in_both_dtypes() -> None:
    seen: Counter[tuple[str, str, str]] = Counter()
    for case in cases(3):
        if case.drawn:
            match = LABEL.match(case.label)
            assert match, case.label
            seen[(case.function, match["kind"], match["dtype"])] += 1
    dtypes = ("float32", "float64")
    assert set(seen) == {(f, k, d) for f in FUNCTIONS for k in SHAPES for d in dtypes}
    assert set(seen.values()) == {1}


def test_shapes_match_their_class_and_stay_small() -> None:
    for seed in range(20):
        for case in cases(seed):
            match = LABEL.match(case.label)
            assert match, case.label
            m, k, k2, n = (int(match[i]) for i in range(2, 6))
            assert k == k2 and max(m, k, n) <= MAX_DIM
            expected = {
                "square": m == k == n > 1,
                "non-square": len({m, k, n}) == 3,
                "row result": m == 1 and k > 1 and n > 1,
                "column result": n == 1 and m > 1 and k > 1,
                "inner dim 1": k == 1 and m > 1 and n > 1,
                "1x1 result": m == n == 1 and k > 1,
            }
            assert expected[match["kind"]], case.label


def test_one_call_per_function_records_its_ops() -> None:
    plan = MatmulThreeWays().plan(5, "cpu")
    traced = Counter(call.function for call in plan.calls if call.trace)
    assert traced == dict.fromkeys(FUNCTIONS, 1)


def test_calls_carry_raw_inputs_and_the_truth_stays_in_the_plan() -> None:
    plan = MatmulThreeWays().plan(11, "cpu")
    for call, case in zip(plan.calls, plan.expected["cases"], strict=True):
        a, b = inputs(call)
        assert call.function == case.function and call.label == case.label
        assert a.dtype == b.dtype == case.expected.dtype
        assert case.label.endswith(str(a.dtype).removeprefix("torch."))
        assert torch.equal(a, case.args[0]) and torch.equal(b, case.args[1])
        exact = a.double() @ b.double()
        torch.testing.assert_close(case.expected, exact.to(a.dtype), rtol=0, atol=0)
        assert case.scale is not None
        torch.testing.assert_close(case.scale, a.double().abs() @ b.double().abs())


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
