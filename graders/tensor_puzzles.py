"""Grader for tensor-puzzles/broadcasting-drills: six small functions from first principles.

Each function must be built from indexing, ``torch.arange``, broadcasting, ``torch.where``
and elementwise arithmetic or comparison (plus ``sum`` for the running total), so the
forbidden names per function are the library calls that would solve that puzzle outright,
and every product routine, so nothing solves it by a matrix product either.

Results are exact for int64 inputs and for everything that only moves values; the float32
running sum is held to a tolerance scaled by the sum of absolute values, which bounds the
rounding error of any summation order.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.draws import draw_int, draw_normal
from graders.tensors import dtype_name

#: product routines: none of the puzzles needs one, and each could stand in for broadcasting
PRODUCTS = frozenset(
    {"matmul", "mm", "bmm", "mv", "einsum", "tensordot", "linear", "dot", "inner"}
    | {"__matmul__", "__rmatmul__", "__imatmul__", "outer", "ger", "kron"}
)
FORBIDDEN: dict[str, frozenset[str]] = {
    "outer": PRODUCTS | {"cartesian_prod"},
    "diag": PRODUCTS | {"diag", "diagonal", "diag_embed", "diagflat", "eye", "trace"},
    "triu": PRODUCTS | {"triu", "tril", "triu_", "tril_", "triu_indices", "tril_indices"},
    "cumsum": PRODUCTS
    | {"cumsum", "cumsum_", "cumprod", "cummax", "cummin", "logcumsumexp"}
    | {"triu", "tril", "triu_indices", "tril_indices"},
    "flip": PRODUCTS | {"flip", "fliplr", "flipud", "rot90"},
    "relu": PRODUCTS
    | {"relu", "relu_", "relu6", "clamp", "clamp_", "clamp_min", "clip", "clip_"}
    | {"maximum", "max", "fmax", "threshold", "hardtanh"},
}
HINTS: dict[str, str] = {
    "outer": (
        "outer(a, b)[i, j] is a[i] * b[j]: a as a column (a[:, None]) times b as a row "
        "(b[None, :]); the result has shape (len(a), len(b))."
    ),
    "diag": (
        "diag(a)[i] is a[i, i]: index the rows and the columns with the same torch.arange(n)."
    ),
    "triu": (
        "triu(a)[i, j] is a[i, j] where j >= i (diagonal included) and 0 below it: compare an "
        "arange column with an arange row and choose with torch.where; keep a's dtype."
    ),
    "cumsum": (
        "cumsum(a)[i] is a[0] + ... + a[i], a[i] included: build mask[i, j] = j <= i from two "
        "aranges, multiply by a[None, :] and sum over j; keep a's dtype."
    ),
    "flip": "flip(a)[i] is a[n - 1 - i]: index a with a reversed arange (n - 1 down to 0).",
    "relu": (
        "relu(a) is a where a > 0 and 0 elsewhere, same shape and dtype as a: "
        "torch.where(a > 0, a, 0) keeps an int64 input int64."
    ),
}
PASSED_FEEDBACK = (
    "All six puzzles solved with broadcasting alone. The trick each time was the same: lay "
    "an index out along one axis with arange, another along a second axis, and let "
    "broadcasting build the whole grid of (i, j) pairs for a comparison or a product. Note "
    "what cumsum cost: an n x n mask to compute n sums. Broadcasting is expressive, not free."
)

_INT_RANGE = 10  # int64 inputs are drawn from [-10, 10)
_FLOAT32_EPS = torch.finfo(torch.float32).eps


def _values(gen: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.int64:
        return torch.randint(-_INT_RANGE, _INT_RANGE, shape, generator=gen)
    return (draw_normal(gen, *shape) * 3).to(dtype)


class TensorPuzzles(CaseGrader):
    name = "tensor_puzzles"
    interface: tuple[str, ...] = tuple(FORBIDDEN)
    forbidden = FORBIDDEN
    forbidden_what = "a library call that solves this puzzle for you"
    hints = HINTS
    passed_feedback = PASSED_FEEDBACK

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Random sizes 2..8 in float32 and int64, plus the one-element edge of each."""
        size = partial(draw_int, gen, 2, 8)
        cases: list[Case] = []
        for dtype in (torch.float32, torch.int64):
            n = size()
            m = (n - 2 + draw_int(gen, 1, 6)) % 7 + 2  # 2..8 but never n: a[:, None] vs b[None, :]
            cases += self._outer(gen, n, m, dtype)
            cases += self._square("diag", gen, size(), dtype, _diag, {})
            cases += self._square("triu", gen, size(), dtype, torch.triu, _TRIU_MISTAKES)
            cases += self._cumsum(gen, size(), dtype)
            cases += self._vector("flip", gen, (size(),), dtype, _flip)
            shape = (draw_int(gen, 1, 4), size()) if dtype.is_floating_point else (size(),)
            cases += self._vector("relu", gen, shape, dtype, torch.relu)
        cases += self._outer(gen, 1, 1, torch.float32) + self._outer(gen, 1, size(), torch.int64)
        cases += self._square("diag", gen, 1, torch.float32, _diag, {})
        cases += self._square("triu", gen, 1, torch.int64, torch.triu, _TRIU_MISTAKES)
        cases += self._cumsum(gen, 1, torch.float32)
        cases += self._vector("flip", gen, (1,), torch.int64, _flip)
        cases += self._vector("relu", gen, (1,), torch.float32, torch.relu)
        return sorted(cases, key=lambda c: self.interface.index(c.function))

    def _outer(self, gen: torch.Generator, n: int, m: int, dtype: torch.dtype) -> list[Case]:
        a, b = _values(gen, (n,), dtype), _values(gen, (m,), dtype)
        expected = torch.outer(a.double(), b.double()).to(dtype)
        label = f"outer of lengths {n} and {m}, {dtype_name(dtype)}"
        return [Case("outer", (a, b), expected, label)]

    def _square(
        self,
        function: str,
        gen: torch.Generator,
        n: int,
        dtype: torch.dtype,
        reference: Callable[[torch.Tensor], torch.Tensor],
        mistakes: dict[str, Callable[[torch.Tensor], torch.Tensor]],
    ) -> list[Case]:
        a = _values(gen, (n, n), dtype)
        known = tuple(Mistake(wrong(a), why) for why, wrong in mistakes.items())
        label = f"{function} of a {n}x{n} {dtype_name(dtype)} matrix"
        return [Case(function, (a,), reference(a), label, mistakes=known)]

    def _cumsum(self, gen: torch.Generator, n: int, dtype: torch.dtype) -> list[Case]:
        a = _values(gen, (n,), dtype)
        expected = torch.cumsum(a.double(), 0).to(dtype)
        # float32 summation error is at most about n * eps * sum(|a|), in any order
        atol = 4 * n * _FLOAT32_EPS * float(a.double().abs().sum()) + 1e-7
        mistakes = tuple(
            Mistake(wrong(a.double()).to(dtype), why) for why, wrong in _CUMSUM_MISTAKES.items()
        )
        label = f"cumsum of length {n}, {dtype_name(dtype)}"
        return [Case("cumsum", (a,), expected, label, atol=atol, mistakes=mistakes)]

    def _vector(
        self,
        function: str,
        gen: torch.Generator,
        shape: tuple[int, ...],
        dtype: torch.dtype,
        reference: Callable[[torch.Tensor], torch.Tensor],
    ) -> list[Case]:
        a = _values(gen, shape, dtype)
        size = "x".join(map(str, shape))
        label = f"{function} of shape {size}, {dtype_name(dtype)}"
        return [Case(function, (a,), reference(a), label)]


def _diag(a: torch.Tensor) -> torch.Tensor:
    return torch.diagonal(a).clone()


def _flip(a: torch.Tensor) -> torch.Tensor:
    return torch.flip(a, (0,))


_TRIU_MISTAKES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "you zeroed the diagonal too; triu keeps it (j >= i, not j > i).": lambda a: torch.triu(a, 1),
    "that is the lower triangle; triu keeps entries on and above the diagonal (j >= i).": (
        torch.tril
    ),
}
_CUMSUM_MISTAKES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "that is the exclusive running sum (a[0] + ... + a[i - 1]); include a[i] (j <= i).": (
        lambda a: torch.cumsum(a, 0) - a
    ),
    "that sums from i to the end; the running sum runs from 0 up to i (mask j <= i).": (
        lambda a: torch.flip(torch.cumsum(torch.flip(a, (0,)), 0), (0,))
    ),
}
