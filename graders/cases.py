"""Graders made of cases: call each learner function on fresh inputs, compare with a
trusted reference computed here, and check it avoided the calls the task forbids.

A subclass says only what is particular to its task: ``make_cases`` (inputs and the
expected outputs, from a seeded generator), the interface, the forbidden names per
function, and the feedback.  Scoring: one check per function for correct results, one
more for each function with forbidden names (awarded only when its results are correct
too, so an empty stub earns nothing), and any checks ``extra_checks`` adds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import torch

from bot.sandbox.api import Call, CallResult, GiB, Limits, SandboxResult
from graders.base import Check, Plan, Verdict, VerdictStatus
from graders.job_status import job_verdict
from graders.source_scan import Rules, forbidden_ops, scan
from graders.tensors import dtype_name, from_raw, to_raw
from graders.tracebacks import summarise_error

_MAX_LISTED = 3


@dataclass(frozen=True)
class Case:
    """One call and what it must return.  ``expected`` never leaves this process."""

    function: str
    args: tuple[torch.Tensor, ...]
    expected: torch.Tensor
    label: str
    rtol: float = 1e-5
    atol: float = 1e-6
    check_dtype: bool = True
    timed_runs: int = 0  # timing samples to take after the call (see bot.sandbox.timing)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    detail: str = ""
    per_function: bool = False  # the same for every case (e.g. not defined): say it once


class CaseGrader:
    """Base class; subclasses set the class attributes and implement ``make_cases``."""

    name: str
    interface: tuple[str, ...]
    limits: Limits = Limits(wall_s=10.0, cpu_s=10.0, memory_bytes=2 * GiB)
    needs_cuda: bool = False
    #: function -> names it may not use (attributes, imports, recorded ops)
    forbidden: Mapping[str, frozenset[str]] = {}
    #: how a forbidden name is described in feedback: "X is <forbidden_what>"
    forbidden_what: str = "not allowed in this task"
    #: function -> one line on what it must compute, shown when it is wrong
    hints: Mapping[str, str] = {}
    passed_feedback: str = "All checks passed."

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        raise NotImplementedError

    def extra_checks(
        self, cases: Sequence[Case], results: Sequence[CallResult | None], device: str
    ) -> list[Check]:
        """Task-specific checks after correctness, e.g. achieved bandwidth; none by default."""
        return []

    def plan(self, seed: int, device: str) -> Plan:
        gen = torch.Generator().manual_seed(seed)
        cases = tuple(self.make_cases(gen, device))
        calls = tuple(
            Call(c.function, tuple(to_raw(a) for a in c.args), c.label, timed_runs=c.timed_runs)
            for c in cases
        )
        return Plan(calls=calls, expected={"cases": cases})

    def judge(self, task: str, plan: Plan, result: SandboxResult, source: str) -> Verdict:
        early = job_verdict(task, result)
        if early is not None:
            return early
        cases: tuple[Case, ...] = plan.expected["cases"]
        results = match_results(plan, result)
        checks: list[Check] = []
        for function, mine in by_function(self.interface, cases, results).items():
            correct = self._correctness(function, mine)
            checks.append(correct)
            if function in self.forbidden:
                checks.append(self._avoids(function, source, recorded_ops(mine), correct.passed))
        checks += self.extra_checks(cases, results, result.device)
        return verdict_from_checks(task, checks, result, self.passed_feedback)

    def _correctness(self, function: str, mine: Sequence[tuple[Case, CallResult | None]]) -> Check:
        name = f"{function}: correct results"
        outcomes = [(c, compare(c, r)) for c, r in mine]
        failed = [(c, o) for c, o in outcomes if not o.ok]
        if not failed:
            return Check(name, True, f"all {len(outcomes)} cases correct")
        case, first = failed[0]
        hint = f" {self.hints[function]}" if function in self.hints else ""
        if first.per_function:
            return Check(name, False, f"{function} {first.detail}.{hint}")
        message = f"failed {len(failed)} of {len(outcomes)} cases. {case.label}: {first.detail}."
        others = [c.label for c, _ in failed[1:]]
        if others:
            more = len(others) - _MAX_LISTED
            message += f" Also failing: {'; '.join(others[:_MAX_LISTED])}"
            message += f" and {more} more." if more > 0 else "."
        return Check(name, False, message + hint)

    def _avoids(self, function: str, source: str, ops: list[str], correct: bool) -> Check:
        name = f"{function}: allowed operations only"
        forbidden = self.forbidden[function]
        rules = Rules(
            forbidden,
            what=self.forbidden_what,
            matmul_operator=False,
            whole_dot=False,
            independent=False,
        )
        report = scan(source, (function,), rules)[function]
        if report.problem:
            return Check(name, False, report.problem)
        problems = [str(f) for f in report.findings]
        seen = forbidden_ops(ops, forbidden)
        if seen:
            problems.append(f"while it ran, torch recorded {', '.join(seen)}")
        if problems:
            return Check(name, False, f"{function}: {'; '.join(problems)}")
        if not report.found:
            return Check(name, False, "not checked: it is not defined as a top-level def")
        if not correct:
            return Check(name, False, "no forbidden call seen; it counts once results are right")
        return Check(name, True, f"uses none of: {', '.join(sorted(forbidden))}")


def verdict_from_checks(
    task: str, checks: Sequence[Check], result: SandboxResult, passed_feedback: str
) -> Verdict:
    """One verdict for a grader's checks, so every grader words and scores it the same.

    ``score`` is the fraction passed; any failure fails the task, and the feedback points
    at the first failing check, since fixing that one often fixes the rest.
    """
    failing = [c for c in checks if not c.passed]
    passed = len(checks) - len(failing)
    feedback = (
        f"{passed} of {len(checks)} checks passed. Start with {failing[0].name}: "
        f"{failing[0].message}"
        if failing
        else passed_feedback
    )
    status: VerdictStatus = "failed" if failing else "passed"
    score = passed / len(checks)
    return Verdict(task, status, score, tuple(checks), feedback, result.wall_s, result.device)


def match_results(plan: Plan, result: SandboxResult) -> list[CallResult | None]:
    """Results in plan order; one whose function or label does not match counts as missing."""
    matched: list[CallResult | None] = []
    for i, call in enumerate(plan.calls):
        got = result.calls[i] if i < len(result.calls) else None
        same = got is not None and (got.function, got.label) == (call.function, call.label)
        matched.append(got if same else None)
    return matched


class _OfFunction(Protocol):
    @property
    def function(self) -> str: ...


_CaseT = TypeVar("_CaseT", bound=_OfFunction)


def by_function(
    interface: Sequence[str], cases: Sequence[_CaseT], results: Sequence[CallResult | None]
) -> dict[str, list[tuple[_CaseT, CallResult | None]]]:
    """Each function's cases with their results (from ``match_results``), in plan order."""
    pairs = list(zip(cases, results, strict=True))
    return {f: [(c, r) for c, r in pairs if c.function == f] for f in interface}


def recorded_ops(mine: Iterable[tuple[object, CallResult | None]]) -> list[str]:
    """Every op torch recorded while these calls ran; a missing result recorded none."""
    return [op for _, r in mine if r is not None for op in r.ops]


def compare(case: Case, result: CallResult | None) -> Outcome:
    """What one call returned (or raised), against the trusted expectation."""
    if result is None:
        return Outcome(False, "no result came back for this case")
    if result.status == "raised":
        return Outcome(False, f"raised {summarise_error(result.error)[1]}")
    if result.status == "skipped":
        return Outcome(False, f"was not run: {result.error or 'an earlier case failed'}")
    if result.status == "not_defined":
        return Outcome(False, "is not defined at the top level of your file", per_function=True)
    if result.status == "not_callable":
        return Outcome(False, f"is a {result.returned_type}, not a function", per_function=True)
    if result.tensor is None:
        kind = result.returned_type or "something else"
        if result.error:
            return Outcome(False, f"returned a {kind} the grader could not read: {result.error}")
        return Outcome(False, f"returned a {kind}, not a torch.Tensor")
    return compare_tensor(case, from_raw(result.tensor))


def compare_tensor(case: Case, got: torch.Tensor) -> Outcome:
    want = case.expected
    if tuple(got.shape) != tuple(want.shape):
        return Outcome(False, f"expected shape {tuple(want.shape)}, got {tuple(got.shape)}")
    if case.check_dtype and got.dtype != want.dtype:
        expected, actual = dtype_name(want.dtype), dtype_name(got.dtype)
        return Outcome(False, f"expected dtype {expected}, got {actual}")
    if want.dtype == torch.bool or not (want.is_floating_point() or got.is_floating_point()):
        wrong = got.to(torch.int64) != want.to(torch.int64)
        error = wrong.to(torch.float64)
    else:
        values, target = got.double(), want.double()
        error = (values - target).abs()
        wrong = ~torch.isclose(values, target, rtol=case.rtol, atol=case.atol, equal_nan=True)
    if not bool(wrong.any()):
        return Outcome(True)
    index = tuple(int(i) for i in wrong.nonzero()[0])
    where = f" at {index}" if index else ""
    return Outcome(
        False,
        f"{int(wrong.sum())} of {wrong.numel()} entries wrong{where}: expected "
        f"{want[index].item():.6g}, got {got[index].item():.6g}"
        + (f" (max abs error {error.max().item():.3g})" if want.is_floating_point() else ""),
    )
