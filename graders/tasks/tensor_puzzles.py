"""Grader for tensor-puzzles/broadcasting-drills: six small functions from first principles.

Each function must be built from indexing, ``torch.arange``, broadcasting, ``torch.where``
and elementwise arithmetic or comparison (plus ``sum`` for the running total), so the
forbidden names per function are the library calls that would solve that puzzle outright,
and every product routine, so nothing solves it by a matrix product either.

Results are exact for int64 inputs and for everything that only moves values; the float32
running sum is held to a tolerance scaled by the sum of absolute values, which bounds the
rounding error of any summation order.  Fixed small inputs in both dtypes are in every
plan, chosen so each common slip (operands swapped, a triangle off by the diagonal, the
wrong axis, a float result for an int64 input...) fails them; every case carries what
those slips return, so a wrong answer is named.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from types import MappingProxyType

import torch

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.declaration import Declaration, Speed
from graders.draws import draw_int, draw_normal
from graders.tensors import dtype_name

DECLARATION = Declaration(
    functions=(
        "outer(a, b) -> Tensor",
        "diag(a) -> Tensor",
        "triu(a) -> Tensor",
        "cumsum(a) -> Tensor",
        "flip(a) -> Tensor",
        "relu(a) -> Tensor",
    ),
    speed=Speed("cumsum", "cumsum_mask"),
)

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

Op = Callable[..., torch.Tensor]


def _diag(a: torch.Tensor) -> torch.Tensor:
    return torch.diagonal(a).clone()


def _flip(a: torch.Tensor) -> torch.Tensor:
    return torch.flip(a, (0,))


def _flip_columns(a: torch.Tensor) -> torch.Tensor:
    return torch.flip(a, (1,))


def _cumsum(a: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(a, 0)


#: what each puzzle computes, applied to float64 copies of the inputs (exact for the
#: int64 values drawn here) and rounded to the input's dtype
REFERENCES: MappingProxyType[str, Op] = MappingProxyType(
    {
        "outer": torch.outer,
        "diag": _diag,
        "triu": torch.triu,
        "cumsum": _cumsum,
        "flip": _flip,
        "relu": torch.relu,
    }
)
#: function -> explanation -> what the slip computes, like REFERENCES
MISTAKES: MappingProxyType[str, dict[str, Op]] = MappingProxyType(
    {
        "outer": {
            "that is outer(b, a): the roles of a and b are swapped. out[i, j] = a[i] * b[j], "
            "so a runs down the rows (a[:, None]) and b along the columns (b[None, :]).": (
                lambda a, b: torch.outer(b, a)
            ),
        },
        "diag": {
            "that is the whole matrix: a[i][i] indexes the rows twice (a[i] picks rows, then "
            "[i] picks rows again); index rows and columns in one go: a[i, i].": torch.clone,
            "that is the anti-diagonal, a[i, n - 1 - i]; the diagonal is a[i, i].": (
                lambda a: _diag(_flip_columns(a))
            ),
        },
        "triu": {
            "you zeroed the diagonal too; triu keeps it (j >= i, not j > i).": (
                lambda a: torch.triu(a, 1)
            ),
            "that is the lower triangle; triu keeps entries on and above the diagonal "
            "(j >= i).": torch.tril,
        },
        "cumsum": {
            "that is the exclusive running sum (a[0] + ... + a[i - 1]); include a[i] "
            "(j <= i).": lambda a: _cumsum(a) - a,
            "that sums from i to the end; the running sum runs from 0 up to i "
            "(mask j <= i).": lambda a: _flip(_cumsum(_flip(a))),
            "the mask was summed over the wrong axis: summing mask[i, j] * a[j] over i gives "
            "a[j] * (n - j). Sum over j, the columns: .sum(1).": (
                lambda a: a * torch.arange(len(a), 0, -1)
            ),
        },
        "flip": {
            "that is a[-i]: a[0] stays first, since -0 is 0. Index with n - 1 - i "
            "(or -1 - i).": lambda a: torch.roll(_flip(a), 1),
        },
        "relu": {
            "negative entries came back as their absolute value; relu sets them to 0: "
            "torch.where(a > 0, a, 0).": torch.abs,
            "the branches of torch.where are swapped: that keeps the negative entries and "
            "zeroes the positive ones. torch.where(a > 0, a, 0).": lambda a: a.clamp(max=0),
        },
    }
)
#: function -> what to say when the values are right but an int64 input came back float32
FLOAT_RESULT: MappingProxyType[str, str] = MappingProxyType(
    {
        "cumsum": (
            "the values are right but the dtype is float32: a float mask (.float()) turns an "
            "int64 input into floats. Multiply by the boolean mask itself, or cast the mask "
            "to a.dtype."
        ),
        "relu": (
            "the values are right but the dtype is float32: a float zero (0.0) in torch.where "
            "promotes an int64 input. Use the integer 0, or torch.zeros_like(a)."
        ),
    }
)


def puzzle_case(function: str, *args: torch.Tensor, drawn: bool = True) -> Case:
    """One call of ``function``, its expectation and what each listed slip returns."""
    dtype = args[0].dtype
    wide = tuple(a.double() for a in args)
    expected = REFERENCES[function](*wide).to(dtype)
    mistakes = [Mistake(wrong(*wide).to(dtype), why) for why, wrong in MISTAKES[function].items()]
    if dtype == torch.int64 and function in FLOAT_RESULT:
        mistakes.append(Mistake(expected.float(), FLOAT_RESULT[function]))
    atol = _cumsum_atol(args[0]) if function == "cumsum" and dtype.is_floating_point else Case.atol
    fixed = "" if drawn else " (fixed)"
    label = f"{function} {_shapes(function, args)}, {dtype_name(dtype)}{fixed}"
    return Case(function, args, expected, label, atol=atol, mistakes=tuple(mistakes), drawn=drawn)


def _cumsum_atol(a: torch.Tensor) -> float:
    """float32 summation error is at most about n * eps * sum(|a|), in any order."""
    return 4 * a.shape[0] * _FLOAT32_EPS * float(a.double().abs().sum()) + 1e-7


def _shapes(function: str, args: tuple[torch.Tensor, ...]) -> str:
    if function == "outer":
        return f"of lengths {len(args[0])} and {len(args[1])}"
    (a,) = args
    if function in {"diag", "triu"}:
        return f"of a {a.shape[0]}x{a.shape[1]} matrix"
    return f"of shape {'x'.join(map(str, a.shape))}"


def _fixed_inputs(dtype: torch.dtype) -> dict[str, tuple[torch.Tensor, ...]]:
    """Small inputs with distinct entries, where every listed slip shows: an outer of
    unequal lengths (swapped operands change the shape) and, in float32, of equal ones
    (they transpose it); nonzero diagonals and triangles; runs with signs mixed."""

    def t(values: list) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype)

    if dtype == torch.int64:
        square = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
        return {
            "outer": (t([1, 2, 3]), t([4, -5])),
            "diag": (t(square),),
            "triu": (t(square),),
            "cumsum": (t([3, -1, 4, 1, -5]),),
            "flip": (t([1, 2, 3, 4, 5]),),
            "relu": (t([[-2, 0, 3], [5, -1, 0]]),),
        }
    square = [[0.5 * (4 * i + j) - 3.0 for j in range(4)] for i in range(4)]
    return {
        "outer": (t([0.5, -1.5]), t([2.0, 3.25])),
        "diag": (t(square),),
        "triu": (t(square),),
        "cumsum": (t([0.5, 1.25, -2.0, 4.0]),),
        "flip": (t([0.5, -1.0, 2.5, 4.0]),),
        "relu": (t([[-1.5, 0.0, 2.25], [-0.5, 3.0, -4.0]]),),
    }


class TensorPuzzles(CaseGrader):
    declaration = DECLARATION
    forbidden = FORBIDDEN
    forbidden_what = "a library call that solves this puzzle for you"
    hints = HINTS
    passed_feedback = PASSED_FEEDBACK

    def fixed_cases(self, device: str) -> list[Case]:
        """The same small inputs in every plan, in both dtypes."""
        return [
            puzzle_case(function, *args, drawn=False)
            for dtype in (torch.int64, torch.float32)
            for function, args in _fixed_inputs(dtype).items()
        ]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Random sizes 2..8 in float32 and int64, plus the one-element edge of each."""
        size = partial(draw_int, gen, 2, 8)
        cases: list[Case] = []
        for dtype in (torch.float32, torch.int64):
            n = size()
            m = (n - 2 + draw_int(gen, 1, 6)) % 7 + 2  # 2..8 but never n: a[:, None] vs b[None, :]
            cases.append(puzzle_case("outer", _values(gen, (n,), dtype), _values(gen, (m,), dtype)))
            for function in ("diag", "triu"):
                k = size()
                cases.append(puzzle_case(function, _values(gen, (k, k), dtype)))
            for function in ("cumsum", "flip"):
                cases.append(puzzle_case(function, _values(gen, (size(),), dtype)))
            shape = (draw_int(gen, 1, 4), size()) if dtype.is_floating_point else (size(),)
            cases.append(puzzle_case("relu", _values(gen, shape, dtype)))
        one = partial(_values, gen, (1,))
        cases += [
            puzzle_case("outer", one(torch.float32), one(torch.float32)),
            puzzle_case("outer", one(torch.int64), _values(gen, (size(),), torch.int64)),
            puzzle_case("diag", _values(gen, (1, 1), torch.float32)),
            puzzle_case("triu", _values(gen, (1, 1), torch.int64)),
            puzzle_case("cumsum", one(torch.float32)),
            puzzle_case("flip", one(torch.int64)),
            puzzle_case("relu", one(torch.float32)),
        ]
        return cases


def _values(gen: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.int64:
        return torch.randint(-_INT_RANGE, _INT_RANGE, shape, generator=gen)
    return (draw_normal(gen, *shape) * 3).to(dtype)
