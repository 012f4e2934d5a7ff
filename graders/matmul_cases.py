"""The test cases of the matmul quest: which shapes, which dtypes, which inputs.

Every shape class catches a different bug: non-square products catch swapped
dimensions, a row or column result catches loops that assume n x n, an inner
dimension of 1 catches a missing or off-by-one inner loop.  Dimensions stay <= 8
so a triple Python loop grades in milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from bot.sandbox.api import Call
from graders.tensors import dtype_name, to_raw

MAX_DIM = 8
DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.float64)

ShapeDraw = Callable[[torch.Generator], tuple[int, int, int]]


@dataclass(frozen=True)
class Case:
    """One product ``A (m x k) @ B (k x n)`` in one dtype."""

    kind: str
    m: int
    k: int
    n: int
    dtype: torch.dtype

    @property
    def dtype_name(self) -> str:
        return dtype_name(self.dtype)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.m}x{self.k} @ {self.k}x{self.n}, {self.dtype_name}"


@dataclass(frozen=True)
class ExpectedCase:
    """What the trusted side keeps for judging one call: the inputs and the true product."""

    function: str
    case: Case
    a: torch.Tensor
    b: torch.Tensor
    product: torch.Tensor  # float64, from torch.matmul on the exact inputs


def _dims(gen: torch.Generator, count: int) -> list[int]:
    """``count`` distinct sizes in 2..MAX_DIM, so m, k and n never coincide by accident."""
    return [int(d) + 2 for d in torch.randperm(MAX_DIM - 1, generator=gen)[:count]]


def _square(gen: torch.Generator) -> tuple[int, int, int]:
    (n,) = _dims(gen, 1)
    return n, n, n


def _non_square(gen: torch.Generator) -> tuple[int, int, int]:
    m, k, n = _dims(gen, 3)
    return m, k, n


def _row_result(gen: torch.Generator) -> tuple[int, int, int]:
    k, n = _dims(gen, 2)
    return 1, k, n


def _column_result(gen: torch.Generator) -> tuple[int, int, int]:
    m, k = _dims(gen, 2)
    return m, k, 1


def _inner_one(gen: torch.Generator) -> tuple[int, int, int]:
    m, n = _dims(gen, 2)
    return m, 1, n


def _one_by_one(gen: torch.Generator) -> tuple[int, int, int]:
    (k,) = _dims(gen, 1)
    return 1, k, 1


SHAPES: dict[str, ShapeDraw] = {
    "square": _square,
    "non-square": _non_square,
    "row result": _row_result,
    "column result": _column_result,
    "inner dim 1": _inner_one,
    "1x1 result": _one_by_one,
}


def build_cases(
    functions: tuple[str, ...], seed: int
) -> tuple[tuple[Call, ...], tuple[ExpectedCase, ...]]:
    """Every function on every shape class in every dtype, with fresh inputs per call."""
    gen = torch.Generator().manual_seed(seed)
    calls: list[Call] = []
    expected: list[ExpectedCase] = []
    for function in functions:
        for dtype in DTYPES:
            for kind, draw in SHAPES.items():
                case = Case(kind, *draw(gen), dtype=dtype)
                a = torch.randn(case.m, case.k, generator=gen, dtype=dtype)
                b = torch.randn(case.k, case.n, generator=gen, dtype=dtype)
                product = torch.matmul(a.double(), b.double())
                # Recording ops costs ~1 ms per call; one recorded call per function is
                # enough for the best-effort rule (the static scan covers every line).
                traced = dtype == DTYPES[0] and kind == "square"
                calls.append(Call(function, (to_raw(a), to_raw(b)), case.label, trace=traced))
                expected.append(ExpectedCase(function, case, a, b, product))
    return tuple(calls), tuple(expected)
