"""One call of a learner's function against the trusted expectation: the case, the typical
mistakes it could reveal, and the comparison that says whether (and how) it is wrong.

Comparison is elementwise, ``|got - want| <= atol + rtol * scale``.  ``scale`` is
``|want|`` unless the case names another: a matrix product's entries can cancel to almost
nothing, so its rounding is bounded by ``|A| @ |B|`` rather than by the result itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from graders.tensors import dtype_name, from_raw
from graders.tracebacks import summarise_error
from sandbox.api import CallResult


@dataclass(frozen=True)
class Mistake:
    """What one typical mistake returns for a case, and what to tell a learner who made it."""

    output: torch.Tensor
    explanation: str


@dataclass(frozen=True)
class Case:
    """One call and what it must return.  ``expected`` never leaves this process.

    ``drawn`` is False for the fixed cases every plan contains (the ones chosen to separate
    the listed mistakes); True for those drawn from the plan's seed.
    """

    function: str
    args: tuple[torch.Tensor, ...]
    expected: torch.Tensor
    label: str
    rtol: float = 1e-5
    atol: float = 1e-6
    check_dtype: bool = True
    trace: bool = True  # record the torch ops it calls (about 1 ms per call)
    mistakes: tuple[Mistake, ...] = ()
    scale: torch.Tensor | None = None  # what rtol is relative to; |expected| when None
    drawn: bool = True


@dataclass(frozen=True)
class Comparison:
    ok: bool
    detail: str = ""
    per_function: bool = False  # the same for every case (e.g. not defined): say it once


def compare(case: Case, result: CallResult | None) -> Comparison:
    """What one call returned (or raised), against the trusted expectation."""
    if result is None:
        return Comparison(False, "no result came back for this case")
    if result.status == "raised":
        return Comparison(False, f"raised {summarise_error(result.error)[1]}")
    if result.status == "skipped":
        return Comparison(False, f"was not run: {result.error or 'an earlier case failed'}")
    if result.status == "not_defined":
        return Comparison(False, "is not defined at the top level of your file", per_function=True)
    if result.status == "not_callable":
        return Comparison(False, f"is a {result.returned_type}, not a function", per_function=True)
    if result.tensor is None:
        return _not_a_tensor(result)
    return compare_tensor(case, from_raw(result.tensor))


def _not_a_tensor(result: CallResult) -> Comparison:
    kind = result.returned_type or "something else"
    if result.error:
        return Comparison(False, f"returned a {kind} the grader could not read: {result.error}")
    if kind == "NoneType":
        return Comparison(False, "returned None: is the `return` statement missing?")
    if kind in {"list", "tuple"}:
        return Comparison(False, f"returned a {kind}; build and return a torch.Tensor instead")
    if kind == "numpy.ndarray":
        return Comparison(False, "returned a numpy array; stay in torch and return the tensor")
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return Comparison(False, f"returned {article} {kind}, not a torch.Tensor")


def compare_tensor(case: Case, got: torch.Tensor) -> Comparison:
    want = case.expected
    if tuple(got.shape) != tuple(want.shape):
        return Comparison(False, f"expected shape {tuple(want.shape)}, got {tuple(got.shape)}")
    if case.check_dtype and got.dtype != want.dtype:
        expected, actual = dtype_name(want.dtype), dtype_name(got.dtype)
        return Comparison(False, f"expected dtype {expected}, got {actual}")
    wrong, error = _wrong_entries(case, got)
    if not bool(wrong.any()):
        return Comparison(True)
    index = tuple(int(i) for i in wrong.nonzero()[0])
    where = f" at {index}" if index else ""
    expected, actual = _distinct(want[index].item(), got[index].item())
    return Comparison(
        False,
        f"{int(wrong.sum())} of {wrong.numel()} entries wrong{where}: expected "
        f"{expected}, got {actual}"
        + (f" (max abs error {error.max().item():.3g})" if want.is_floating_point() else ""),
    )


def _distinct(expected: float, actual: float) -> tuple[str, str]:
    """Both numbers with 6 significant digits, or as many as it takes to tell them apart;
    integers in full (an exact count of 21611590 reads badly as 2.16116e+07)."""
    if type(expected) is int and type(actual) is int:
        return str(expected), str(actual)
    for digits in (6, 9, 12, 17):
        shown = f"{expected:.{digits}g}", f"{actual:.{digits}g}"
        if shown[0] != shown[1]:
            return shown
    return shown


def error_ratio(case: Case, got: torch.Tensor) -> float:
    """The largest ``|got - want| / (atol + rtol * scale)``: at most 1 passes.  Infinite for
    a wrong shape, dtype, integer entry or nan; used to measure how far from the tolerance
    correct formulations and mistakes land."""
    if tuple(got.shape) != tuple(case.expected.shape):
        return float("inf")
    if case.check_dtype and got.dtype != case.expected.dtype:
        return float("inf")
    if not _is_float(case.expected, got):
        return float("inf") if bool(_wrong_entries(case, got)[0].any()) else 0.0
    values, target = got.double(), case.expected.double()
    both_nan = values.isnan() & target.isnan()
    same = (values == target) | both_nan
    ratio = ((values - target).abs() / _allowed(case)).masked_fill(same, 0.0)
    ratio = ratio.nan_to_num(nan=float("inf"))
    return float(ratio.max()) if ratio.numel() else 0.0


def explained_by(case: Case, got: torch.Tensor, among: Sequence[str] | None = None) -> list[str]:
    """The explanations of the listed mistakes whose output ``got`` reproduces, within the
    case's own tolerance (a mistaken computation rounds much like the right one); only
    those ``among`` when given."""
    return [
        m.explanation
        for m in case.mistakes
        if (among is None or m.explanation in among)
        and compare_tensor(replace(case, expected=m.output, scale=_scale_for(case, m)), got).ok
    ]


def _scale_for(case: Case, mistake: Mistake) -> torch.Tensor | None:
    """The case's own scale, unless the mistake's output has another shape (a transpose)."""
    if case.scale is None or case.scale.shape != mistake.output.shape:
        return None
    return case.scale


def _is_float(want: torch.Tensor, got: torch.Tensor) -> bool:
    return want.dtype != torch.bool and (want.is_floating_point() or got.is_floating_point())


def _allowed(case: Case) -> torch.Tensor:
    scale = case.expected.double().abs() if case.scale is None else case.scale.double()
    return case.atol + case.rtol * scale


def _wrong_entries(case: Case, got: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Which entries are wrong, and the absolute error of each (as float64)."""
    want = case.expected
    if not _is_float(want, got):
        wrong = got.to(torch.int64) != want.to(torch.int64)
        return wrong, wrong.to(torch.float64)
    values, target = got.double(), want.double()
    error = (values - target).abs()
    both_nan = values.isnan() & target.isnan()
    same = (values == target) | both_nan  # equal infinities included
    wrong = ~same & ~(error <= _allowed(case))  # a nan error is wrong
    return wrong, error
