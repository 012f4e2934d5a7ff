"""Judge one call of a learner's matmul against the trusted product, and say why it is wrong.

Tolerances scale with ``|A| @ |B|``, the size of the terms summed into each entry, so
rounding in a correct float32 loop stays inside them while real mistakes land far outside.
Feedback names the concrete mistake when it is a common one (a transposed result,
``B @ A``, an untouched row) because "wrong values" alone teaches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bot.sandbox.api import CallResult
from graders.matmul_cases import ExpectedCase
from graders.tensors import dtype_name, from_raw
from graders.tracebacks import summarise_error

#: (relative, absolute) tolerance per dtype, relative to (|A| @ |B|)[i, j]
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-4, 1e-5),
    torch.float64: (1e-10, 1e-12),
}

_ZEROS_HINT = "torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)"


@dataclass(frozen=True)
class Outcome:
    """The verdict on one case; ``detail`` and ``hint`` are empty when it passed.

    ``per_function`` marks failures that are the same for every case (the function is
    missing), so feedback states them once instead of per case.
    """

    ok: bool
    detail: str = ""
    hint: str = ""
    per_function: bool = False


def compare(expected: ExpectedCase, result: CallResult) -> Outcome:
    """Check what one call returned (or raised) against the true product."""
    if result.status == "raised":
        kind, summary = summarise_error(result.error)
        return Outcome(False, f"raised {summary}", _exception_hint(kind, result.error))
    if result.status == "skipped":
        reason = f": {result.error}" if result.error else ""
        return Outcome(False, f"was not run{reason}", "fix the problem reported for earlier cases")
    if result.status == "not_defined":
        hint = f"define {expected.function}(A, B) at the top level of your file (check spelling)"
        return Outcome(False, "is not defined", hint, per_function=True)
    if result.status == "not_callable":
        what = f" (it is a {result.returned_type})" if result.returned_type else ""
        hint = f"make it a function: def {expected.function}(A, B): ..."
        return Outcome(False, f"is defined but is not a function{what}", hint, per_function=True)
    if result.tensor is None:
        return _not_a_tensor(result)
    return _compare_tensor(expected, from_raw(result.tensor))


def _not_a_tensor(result: CallResult) -> Outcome:
    kind = result.returned_type or "something else"
    if kind == "NoneType":
        return Outcome(False, "returned None", "did you forget `return C` at the end?")
    if kind in {"list", "tuple"}:
        return Outcome(
            False,
            f"returned a {kind}",
            f"build the result with {_ZEROS_HINT} and fill it, then return that tensor",
        )
    if kind == "numpy.ndarray":
        return Outcome(
            False,
            "returned a numpy array",
            "stay in torch: build the result as a tensor and return it without .numpy()",
        )
    if kind in {"float", "int"}:
        return Outcome(
            False,
            f"returned a single {kind}",
            "return the whole result matrix as a 2-D tensor, not one entry",
        )
    if result.error:
        return Outcome(False, f"returned a {kind} the grader could not read: {result.error}", "")
    return Outcome(False, f"returned a {kind}", f"return a torch.Tensor, e.g. {_ZEROS_HINT}")


def _compare_tensor(expected: ExpectedCase, got: torch.Tensor) -> Outcome:
    case = expected.case
    want_shape = (case.m, case.n)
    if tuple(got.shape) != want_shape:
        return Outcome(
            False,
            f"expected shape {want_shape}, got {tuple(got.shape)}",
            _shape_hint(want_shape, tuple(got.shape)),
        )
    if got.dtype != case.dtype:
        return Outcome(
            False,
            f"expected dtype {case.dtype_name}, got {dtype_name(got.dtype)}",
            "return the inputs' dtype: torch.zeros(...) makes float32 unless you pass "
            "dtype=A.dtype",
        )
    values = got.double()
    finite = torch.isfinite(values)
    if not bool(finite.all()):
        i, j = (int(x) for x in (~finite).nonzero()[0])
        return Outcome(
            False,
            f"contains {values[i, j].item()} at ({i}, {j})",
            "every entry must be assigned: start from torch.zeros, not torch.empty",
        )
    return _compare_values(expected, values)


def _compare_values(expected: ExpectedCase, got: torch.Tensor) -> Outcome:
    rtol, atol = TOLERANCES[expected.case.dtype]
    want = expected.product
    scale = torch.matmul(expected.a.double().abs(), expected.b.double().abs())
    error = (got - want).abs()
    wrong = error > atol + rtol * scale
    if not bool(wrong.any()):
        return Outcome(True)
    flat = int(error.argmax())
    i, j = divmod(flat, want.shape[1])
    detail = (
        f"{int(wrong.sum())} of {wrong.numel()} entries wrong, max abs error "
        f"{error[i, j].item():.3g} at ({i}, {j}): expected {want[i, j].item():.6g}, "
        f"got {got[i, j].item():.6g}"
    )
    return Outcome(False, detail, _value_hint(expected, got, wrong))


def _close(got: torch.Tensor, other: torch.Tensor) -> bool:
    return got.shape == other.shape and bool(torch.allclose(got, other, rtol=1e-4, atol=1e-5))


def _value_hint(expected: ExpectedCase, got: torch.Tensor, wrong: torch.Tensor) -> str:
    a, b = expected.a.double(), expected.b.double()
    if not bool(got.any()):
        return "the result is all zeros: nothing was written into it (or into a copy of it)"
    if a.shape == b.shape and a.shape[0] == a.shape[1]:
        if _close(got, expected.product.T):
            return "you computed the transpose: C[i, j] pairs row i of A with column j of B"
        if _close(got, torch.matmul(b, a)):
            return "you computed B @ A; the order matters: C = A @ B"
        if _close(got, a * b):
            return "that is the elementwise product A * B, not the matrix product"
    rows, cols = wrong.any(dim=1), wrong.any(dim=0)
    if int(rows.sum()) == 1 and bool(rows[-1]) and wrong.shape[0] > 1:
        return "only the last row is wrong: check the range of your row loop"
    if int(cols.sum()) == 1 and bool(cols[-1]) and wrong.shape[1] > 1:
        return "only the last column is wrong: check the range of your column loop"
    return "C[i, j] must be the sum over k of A[i, k] * B[k, j], for every k in range(A.shape[1])"


def _shape_hint(want: tuple[int, int], got: tuple[int, ...]) -> str:
    if len(got) != 2:
        return f"return a 2-D tensor; a {want[0]}x{want[1]} result stays 2-D even with a 1 in it"
    if got == want[::-1]:
        return "rows and columns are swapped: the result has A's rows and B's columns"
    return "an (m x k) @ (k x n) product is m x n: use A.shape[0] rows and B.shape[1] columns"


def _exception_hint(kind: str, error: str) -> str:
    if "1D tensors expected" in error:
        return "torch.dot takes two 1-D tensors: a row A[i] and a column B[:, j]"
    if kind == "IndexError":
        return (
            "an index ran past the end: A is m x k and B is k x n, so take the loop bounds "
            "from A.shape[0], A.shape[1] and B.shape[1] rather than one size for all"
        )
    if kind == "NameError":
        return "a name is not defined where it is used: is `import torch` at the top of the file?"
    if kind == "RuntimeError" and ("size" in error or "shape" in error):
        return "the shapes don't line up: print A.shape and B.shape and check each operation"
    return "run the function yourself on small inputs, e.g. torch.randn(3, 5) and torch.randn(5, 2)"
