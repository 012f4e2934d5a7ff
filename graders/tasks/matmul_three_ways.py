"""Grader for go-brrrr/matmul-three-ways: one matrix product, written three ways.

Every function meets six shape classes, each catching a different slip: square (where
``B @ A``, a transpose and ``A * B`` all have the right shape), non-square (swapped
dimensions), a row or a column result (loops that assume n x n), an inner size of 1 (a
missing or off-by-one inner loop) and a 1x1 result, in float32 and float64, with m, k and
n distinct.  Dimensions stay <= 8 so a triple Python loop grades in milliseconds.

A correct entry may differ from the exact product by ``tol * (1 + (|A| @ |B|)[i, j])``,
the size of the terms summed into it, with ``tol`` 1e-5 in float32 and 1e-10 in float64:
any summation order passes (a float32 loop over k <= 8 terms is off by ~1e-7 of that),
while a missing, extra or misplaced term is off by the size of a term.

Two checks per function: correct results, then ``builds the product itself``: no
whole-matrix product, by the static scan with the matmul rules and the ops the sandbox
recorded (see ``graders.source_scan``), made once the results are right.
"""

from __future__ import annotations

import torch

from graders.base import Check
from graders.cases import CaseGrader, scan_once
from graders.comparison import Case, Mistake
from graders.declaration import Declaration
from graders.draws import draw_normal
from graders.source_scan import FORBIDDEN, MATMUL_RULES, forbidden_ops
from graders.tensors import dtype_name

DECLARATION = Declaration(
    functions=(
        "matmul_loops(A, B) -> Tensor",
        "matmul_dot(A, B) -> Tensor",
        "matmul_columns(A, B) -> Tensor",
    ),
)

METHODS: dict[str, str] = {
    "matmul_loops": "three nested loops, C[i, j] += A[i, p] * B[p, j]",
    "matmul_dot": "one 1-D dot product per entry, C[i, j] = torch.dot(A[i], B[:, j])",
    "matmul_columns": (
        "each column a weighted sum of A's columns, C[:, j] = sum over p of B[p, j] * A[:, p]"
    ),
}
_SHAPE_RULE = (
    " For A of shape (n, k) and B of shape (k, m), C has shape (n, m) and A's dtype; each "
    "entry must be within 1e-5 (float32) or 1e-10 (float64) times 1 + (|A| @ |B|)[i, j]."
)
HINTS: dict[str, str] = {
    "matmul_loops": "C[i, j] is the sum over p of A[i, p] * B[p, j]: loop i over "
    "A.shape[0], j over B.shape[1] and p over A.shape[1], adding with +=." + _SHAPE_RULE,
    "matmul_dot": "C[i, j] = torch.dot(A[i], B[:, j]): torch.dot takes two 1-D tensors, "
    "row i of A and column j of B." + _SHAPE_RULE,
    "matmul_columns": "column j of C is the sum over p of B[p, j] * A[:, p], for each j in "
    "range(B.shape[1])." + _SHAPE_RULE,
}
NONFINITE = (
    "your result has nan or inf although every entry of A @ B is finite: was every entry "
    "assigned? torch.empty leaves whatever was in memory; start from torch.zeros."
)
PASSED_FEEDBACK = (
    "All three are right. They do the same n*m*k multiply-adds, yet matmul_loops runs every "
    "one as a separate Python step, matmul_dot hands each inner sum to one torch.dot call, "
    "and matmul_columns does one vector operation per (p, j) pair. Time them on 128x128 "
    "inputs: the fewer trips through the Python interpreter, the faster it goes."
)
#: relative and absolute tolerance per dtype, as the prompt states it
TOLERANCE: dict[torch.dtype, float] = {torch.float32: 1e-5, torch.float64: 1e-10}
DTYPES = tuple(TOLERANCE)
MAX_DIM = 8
#: the fixed cases' full-precision inputs are drawn once from this seed, the same in every plan
_FIXED_SEED = 0
SHAPES = ("square", "non-square", "row result", "column result", "inner dim 1", "1x1 result")

DTYPE = (
    "your result is float32 for float64 inputs: torch.zeros makes float32 unless you pass "
    "dtype=A.dtype (or use A.new_zeros), and whatever is written into it is rounded to "
    "float32."
)
NARROWED = (
    "your float64 result has only float32 precision (errors near 1e-7 of each entry): it was "
    "summed in float32, e.g. in torch.zeros without a dtype, and converted at the end; "
    "allocate C with dtype=A.dtype so every step stays in float64."
)
TRANSPOSED = (
    "you computed the transpose: C[i, j] pairs row i of A with column j of B, and C has "
    "A's rows and B's columns."
)
SWAPPED = "you computed B @ A; the order matters: C[i, j] sums A[i, p] * B[p, j]."
ELEMENTWISE = (
    "that is the elementwise product A[i, j] * B[i, j], not the matrix product: C[i, j] "
    "sums A[i, p] * B[p, j] over every p."
)
ROW_OF_B = (
    "you paired row i of A with row j of B (B[j], or B[j, p]); the product needs column j "
    "of B: B[:, j], or B[p, j]."
)
LAST_TERM = (
    "only the last term of each sum survived: inside the loop over p, C[i, j] = ... "
    "overwrites the entry; add to it with +=."
)
SKIPS_LAST = (
    "each entry misses the last term of its sum: the loop over p must run over "
    "range(A.shape[1]), every p from 0 to k - 1."
)
LAST_ROW = "the last row is zero: the row loop must run over range(A.shape[0])."
LAST_COLUMN = "the last column is zero: the column loop must run over range(B.shape[1])."
ZEROS = (
    "the result is all zeros: nothing was written into it. `x = x + ...` on a row or column "
    "you took out of C makes a new tensor; write into C itself (C[:, j] += ... or C[i, j] = ...)."
)


class MatmulThreeWays(CaseGrader):
    declaration = DECLARATION
    forbidden = dict.fromkeys(METHODS, FORBIDDEN)
    hints = HINTS
    nonfinite_hint = NONFINITE
    passed_feedback = PASSED_FEEDBACK

    def fixed_cases(self, device: str) -> list[Case]:
        """A 2x2 square in float32 small enough to show (B @ A, the transpose and A * B
        all differ there) and a non-square float64 product of full-precision values."""
        a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
        b = torch.tensor([[5.0, 6.0], [7.0, 8.0]], dtype=torch.float64)
        gen = torch.Generator().manual_seed(_FIXED_SEED)
        c, d = draw_normal(gen, 3, 4), draw_normal(gen, 4, 2)
        return [
            _case(f, kind, x, y, dtype, drawn=False)
            for f in self.interface
            for kind, x, y, dtype in (
                ("square", a, b, torch.float32),
                ("non-square", c, d, torch.float64),
            )
        ]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Every shape class in both dtypes, with fresh sizes and values per call; the
        float32 square is the one call per function whose ops are recorded (~1 ms each)."""
        cases = []
        for function in self.interface:
            for dtype in DTYPES:
                for kind in SHAPES:
                    m, k, n = _draw_shape(gen, kind)
                    a, b = draw_normal(gen, m, k), draw_normal(gen, k, n)
                    traced = dtype == torch.float32 and kind == "square"
                    cases.append(_case(function, kind, a, b, dtype, trace=traced))
        return cases

    def rule_check(self, function: str, source: str, ops: list[str], correct: bool) -> Check:
        """The matmul rules: no ``@``, no whole-matrix ``dot`` and the three functions
        independent of one another, besides the forbidden names."""
        name = f"{function}: builds the product itself"
        how = f"Build it with {METHODS[function]}."
        report = scan_once(source, self.interface, MATMUL_RULES)[function]
        if report.problem:
            return Check(name, False, f"{report.problem}. {how}")
        problems = [str(f) for f in report.findings]
        seen = forbidden_ops(ops)
        if seen:
            problems.append(f"while it ran, torch recorded {', '.join(seen)}")
        if problems:
            listed = "; ".join(problems)
            return Check(name, False, f"{function} uses a whole-matrix product ({listed}). {how}")
        if not correct:
            return Check(name, False, "not checked: it counts once results are right", False)
        if not report.found:
            return Check(
                name,
                False,
                f"not checked: it is defined at run time, not as a top-level def. {how}",
            )
        return Check(name, True, f"no whole-matrix product: {METHODS[function]}")


def _draw_shape(gen: torch.Generator, kind: str) -> tuple[int, int, int]:
    """(m, k, n) of the class ``kind``, from distinct sizes in 2..MAX_DIM so that m, k and
    n never coincide by accident."""
    x, y, z = (int(d) + 2 for d in torch.randperm(MAX_DIM - 1, generator=gen)[:3])
    return {
        "square": (x, x, x),
        "non-square": (x, y, z),
        "row result": (1, x, y),
        "column result": (x, y, 1),
        "inner dim 1": (x, 1, y),
        "1x1 result": (1, x, 1),
    }[kind]


def _case(
    function: str,
    kind: str,
    a: torch.Tensor,
    b: torch.Tensor,
    dtype: torch.dtype,
    *,
    drawn: bool = True,
    trace: bool = False,
) -> Case:
    """``a @ b`` in ``dtype``; ``a`` and ``b`` come in float64 and are rounded first, so
    the reference, the scale and the mistakes all see the learner's exact inputs."""
    a, b = a.to(dtype), b.to(dtype)
    wide_a, wide_b = a.double(), b.double()
    (m, k), n = a.shape, b.shape[1]
    tol = TOLERANCE[dtype]
    return Case(
        function,
        (a, b),
        torch.matmul(wide_a, wide_b).to(dtype),
        f"{kind} {m}x{k} @ {k}x{n}, {dtype_name(dtype)}",
        rtol=tol,
        atol=tol,
        trace=trace,
        mistakes=_mistakes(wide_a, wide_b, dtype),
        scale=torch.matmul(wide_a.abs(), wide_b.abs()),
        drawn=drawn,
    )


def _mistakes(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> tuple[Mistake, ...]:
    """What each listed slip returns for ``a @ b`` (float64 inputs), in the case's dtype.
    Slips that only run on some shapes are listed for those (``B @ A`` on square ones,
    ``A[i, j] * B[i, j]`` where both exist for every entry of C): elsewhere such code
    raises, and a raise needs no likely cause."""
    (m, k), n = a.shape, b.shape[1]
    product = torch.matmul(a, b)
    last_row, last_column = product.clone(), product.clone()
    last_row[-1] = 0
    last_column[:, -1] = 0
    wrong = [
        (product.T, TRANSPOSED),
        (a[:, -1:] * b[-1:], LAST_TERM),
        (torch.matmul(a[:, :-1], b[:-1]), SKIPS_LAST),
        (last_row, LAST_ROW),
        (last_column, LAST_COLUMN),
        (torch.zeros_like(product), ZEROS),
    ]
    if m == k == n:
        wrong += [(torch.matmul(b, a), SWAPPED), (torch.matmul(a, b.T), ROW_OF_B)]
    if m <= k and n <= k:
        wrong.append((a[:, :n] * b[:m], ELEMENTWISE))
    mistakes = [Mistake(output.to(dtype), why) for output, why in wrong]
    if dtype == torch.float64:
        for narrow in (product.float(), _float32_sum(a, b)):
            mistakes += [Mistake(narrow, DTYPE), Mistake(narrow.double(), NARROWED)]
    return tuple(mistakes)


def _float32_sum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``C += A[i, p] * B[p, j]`` into a float32 ``C``: each term is a float64 product,
    and each sum is rounded to float32 on the way into C (as in a loop over p)."""
    out = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)
    for p in range(a.shape[1]):
        out = (out.double() + a[:, p : p + 1] * b[p : p + 1]).float()
    return out
