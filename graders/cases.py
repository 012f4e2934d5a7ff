"""Graders made of cases: call each learner function on fresh inputs, compare with a
trusted reference computed here, and check it avoided the calls the task forbids.

A subclass says only what is particular to its task: its ``declaration`` (the interface,
limits and device, ``graders.declaration``), ``fixed_cases`` (the same in every plan, chosen
so each common mistake fails them whatever the seed), ``make_cases`` (drawn from the plan's
seeded generator, for coverage), the forbidden names per function and the feedback.
Scoring: one check per function for correct results, one more for each function with
forbidden names (made only once its results are correct, so an empty stub earns nothing),
and any checks ``extra_checks`` adds.

A speed-ranked task's verdict is the grader's too: after a pass the worker runs the trial
(and profiles the function) and hands them to ``judge_speed``, which adds what it found (the
result to rank, a note, the bound they name in a sentence (``graders.bottleneck``), the
profile, and whatever the task's ``roofline_reading`` makes of the bandwidth) and scores
again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, TypeVar

import torch

from graders.base import (
    BatchedRun,
    Check,
    HostPeak,
    Plan,
    SpeedResult,
    TrialOutcome,
    Verdict,
    VerdictStatus,
)
from graders.bottleneck import name_bound, profile_note
from graders.comparison import Case, compare
from graders.declaration import Declaration
from graders.job_status import job_verdict
from graders.mistakes import diagnose
from graders.roofline import Reading
from graders.source_scan import Rules, ScanReport, forbidden_ops, scan
from graders.tensors import to_raw
from sandbox.api import Call, CallResult, Limits, SandboxResult

_MAX_LISTED = 3
#: inputs with at most this many numbers in all are shown in the feedback; larger ones
#: get the command that replays the draw
SMALL_INPUT = 12
_NON_FINITE = re.compile(r"\b(inf|nan)\b")


class CaseGrader:
    """Base class; subclasses set the class attributes and implement ``make_cases``.

    A grader in ``graders/tasks/`` sets ``declaration`` (its module's ``DECLARATION``) and
    nothing else of its interface: ``name`` (the module's, by the registry's naming rule),
    ``interface``, ``limits`` and ``needs_cuda`` are taken from it when the class is made."""

    declaration: ClassVar[Declaration]
    name: ClassVar[str]
    interface: ClassVar[tuple[str, ...]]
    limits: ClassVar[Limits] = Limits()
    needs_cuda: ClassVar[bool] = False
    #: function -> names it may not use (attributes, imports, recorded ops)
    forbidden: Mapping[str, frozenset[str]] = {}
    #: how a forbidden name is described in feedback: "X is <forbidden_what>"
    forbidden_what: str = "not allowed in this task"
    #: function -> one line on what it must compute, shown when it is wrong
    hints: Mapping[str, str] = {}
    passed_feedback: str = "All checks passed."

    #: said when a result has nan or inf where every expected entry is finite
    nonfinite_hint: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("declaration")
        if declared is not None:
            cls.name = cls.__module__.rpartition(".")[2]
            cls.interface = declared.interface
            cls.limits = declared.limits
            cls.needs_cuda = declared.prefers_cuda

    def fixed_cases(self, device: str) -> list[Case]:
        """Cases in every plan, whatever the seed (``drawn=False``); none by default."""
        return []

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Cases drawn from ``gen``, the plan's seeded generator."""
        raise NotImplementedError

    def extra_checks(
        self, cases: Sequence[Case], results: Sequence[CallResult | None], device: str
    ) -> list[Check]:
        """Task-specific checks after correctness, e.g. achieved bandwidth; none by default."""
        return []

    def plan(self, seed: int, device: str) -> Plan:
        gen = torch.Generator().manual_seed(seed)
        return self.plan_of([*self.fixed_cases(device), *self.make_cases(gen, device)], seed)

    def plan_of(self, cases: Iterable[Case], seed: int = 0) -> Plan:
        """A plan calling ``cases`` grouped by function in interface order (stable)."""
        ordered = tuple(sorted(cases, key=lambda c: self.interface.index(c.function)))
        calls = tuple(
            Call(
                c.function,
                tuple(to_raw(a) for a in c.args),
                c.label,
                trace=c.trace,
            )
            for c in ordered
        )
        return Plan(calls=calls, expected={"cases": ordered}, seed=seed)

    def judge(self, task: str, plan: Plan, result: SandboxResult, source: str) -> Verdict:
        early = job_verdict(task, result)
        if early is not None:
            return early
        cases: tuple[Case, ...] = plan.expected["cases"]
        results = match_results(plan, result)
        checks: list[Check] = []
        for function, mine in by_function(self.interface, cases, results).items():
            correct = self._correctness(task, plan.seed, function, mine)
            checks.append(correct)
            if function in self.forbidden:
                checks.append(self.rule_check(function, source, recorded_ops(mine), correct.passed))
        checks += self.extra_checks(cases, results, result.device)
        return verdict_from_checks(task, checks, result, self.passed_feedback)

    def judge_speed(self, verdict: Verdict, trial: TrialOutcome, peak: HostPeak) -> Verdict:
        """``verdict`` (a pass) with the speed trial the worker ran after it: the result to
        rank (placed under ``peak``'s roofs, with the bound they name), a note of how fast it
        was or why it is not ranked, the bound in a sentence, the profile (advice), and what
        ``roofline_reading`` makes of it, scored again.  A trial that failed on our side makes
        the verdict an error: no score, no XP."""
        if trial.result is None and trial.our_fault:
            return Verdict.internal_error(
                verdict.task, f"the speed trial could not run on our side: {trial.reason}"
            )
        result = trial.result
        notes: list[str] = []
        if result is None:
            notes.append(f"Speed not ranked: {trial.reason}.")
        else:
            notes.append(f"Speed: {result.describe()}, timed by the worker on fresh inputs.")
            naming = name_bound(result, trial.profile, peak)
            result = dataclasses.replace(
                result,
                peak_gbs=peak.gbs,
                peak_gflops=peak.gflops,
                bound=naming.bound,
                bound_sentence=naming.sentence,
            )
            if naming.sentence:
                notes.append(naming.sentence)
            if trial.batched is not None:
                notes.append(self.batching_note(result, trial.batched))
            if trial.profile is not None:
                notes.append(profile_note(trial.profile))
            elif trial.profile_problem:
                notes.append(f"The profile could not be taken: {trial.profile_problem}.")
        reading = self.roofline_reading(trial, peak)
        return rescored(
            dataclasses.replace(verdict, speed=result, profile=trial.profile),
            reading.checks,
            (*notes, *reading.notes),
        )

    def batching_note(self, single: SpeedResult, batched: BatchedRun) -> str:
        """What a batch of ``batched.batch`` cost against one call (the learner's median
        calls): ``cost``× the time for ``batch / cost``× the work per second."""
        if batched.result is None:
            return f"Batching not measured: {batched.reason}."
        cost = batched.result.learner_s / single.learner_s
        return (
            f"Batching: {batched.batch} at once cost {cost:.1f}× one: "
            f"{batched.batch / cost:.1f}× the throughput."
        )

    def roofline_reading(self, trial: TrialOutcome, peak: HostPeak) -> Reading:
        """What this task makes of the trial's bandwidth against ``peak``: nothing unless
        bandwidth is its lesson (``graders.roofline.bandwidth_lesson``)."""
        return Reading()

    def _correctness(
        self,
        task: str,
        seed: int,
        function: str,
        mine: Sequence[tuple[Case, CallResult | None]],
    ) -> Check:
        """All cases right, or the first failing one with what it was given (or how to
        replay it), the task's hint and the likely cause when a known mistake explains it."""
        name = f"{function}: correct results"
        outcomes = [(c, compare(c, r)) for c, r in mine]
        failed = [(c, o) for c, o in outcomes if not o.ok]
        wrong = [pair for pair, (_, o) in zip(mine, outcomes, strict=True) if not o.ok]
        if not failed:
            return Check(name, True, f"all {len(outcomes)} cases correct")
        case, first = failed[0]
        if first.per_function:
            message = f"{function} {first.detail}."
        else:
            message = (
                f"failed {len(failed)} of {len(outcomes)} cases. {case.label}: {first.detail}. "
                f"{_reproduce(case, task, seed)}"
            )
            others = [c.label for c, _ in failed[1:]]
            if others:
                more = len(others) - _MAX_LISTED
                message += f" Also failing: {'; '.join(others[:_MAX_LISTED])}"
                message += f" and {more} more." if more > 0 else "."
        cause = diagnose(wrong, self.nonfinite_hint)
        if cause:
            message += f" Likely cause: {cause}"
        elif function in self.hints:
            message += f" {self.hints[function]}"
        return Check(name, False, message)

    def rule_check(self, function: str, source: str, ops: list[str], correct: bool) -> Check:
        """Whether ``function`` kept to the task's rules: a static scan of the source and
        the ops torch recorded.  A grader with rules of its own overrides this."""
        name = f"{function}: allowed operations only"
        forbidden = self.forbidden[function]
        rules = Rules(
            forbidden,
            what=self.forbidden_what,
            matmul_operator=False,
            whole_dot=False,
            independent=False,
        )
        report = scan_once(source, (function,), rules)[function]
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
            return Check(name, False, "not checked: it counts once results are right", False)
        return Check(name, True, f"uses none of: {', '.join(sorted(forbidden))}")


def verdict_from_checks(
    task: str, checks: Sequence[Check], result: SandboxResult, passed_feedback: str
) -> Verdict:
    """One verdict for a grader's checks, so every grader words and scores it the same.

    ``score`` is the fraction passed; any failure fails the task, and the feedback points
    at the first failing check, since fixing that one often fixes the rest.  It names the
    check rather than repeating it: the checks are shown right below.
    """
    failing = [c for c in checks if not c.passed and c.checked]
    passed = sum(c.passed for c in checks)
    feedback = (
        f"{passed} of {len(checks)} checks passed. Start with “{failing[0].name}” below."
        if failing
        else passed_feedback
    )
    status: VerdictStatus = "passed" if passed == len(checks) else "failed"
    score = passed / len(checks)
    return Verdict(task, status, score, tuple(checks), feedback, result.wall_s, result.device)


def rescored(verdict: Verdict, checks: Sequence[Check], notes: Sequence[str]) -> Verdict:
    """``verdict`` with more checks and notes, scored again as ``verdict_from_checks``
    words it, except that a check not made (``checked=False``) fails nothing."""
    checks = (*verdict.checks, *checks)
    passed = sum(c.passed for c in checks)
    failing = [c for c in checks if not c.passed and c.checked]
    feedback = verdict.feedback
    if failing:
        feedback = f"{passed} of {len(checks)} checks passed. Start with “{failing[0].name}” below."
    return dataclasses.replace(
        verdict,
        checks=checks,
        status="failed" if failing else "passed",
        score=passed / len(checks) if checks else verdict.score,
        feedback=feedback,
        notes=(*verdict.notes, *notes),
    )


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


def _reproduce(case: Case, task: str, seed: int) -> str:
    """The failing input itself when it is small, else the command that replays the draw."""
    if sum(a.numel() for a in case.args) <= SMALL_INPUT:
        shown = ", ".join(_literal(a) for a in case.args)
        return f"Input: {case.function}({shown})."
    return f"Replay it: `brrrbot grade YOUR_FILE --task {task} --seed {seed}`."


def _literal(tensor: torch.Tensor) -> str:
    """A tensor as Python that rebuilds it exactly (floats by their shortest round-trip
    repr), so the learner can paste the failing input into their own session."""
    values = _NON_FINITE.sub(r"float('\1')", repr(tensor.tolist()))  # -inf: -float('inf')
    dtype = "" if tensor.dtype == torch.int64 else f", dtype=torch.{str(tensor.dtype)[6:]}"
    return f"torch.tensor({values}{dtype})"


def scan_once(source: str, functions: tuple[str, ...], rules: Rules) -> Mapping[str, ScanReport]:
    """``scan``, remembered: a source is judged once per function, and a catalogue sweep
    judges the same sources on hundreds of plans.  Keyed by the source's digest, so a worker
    keeps no submission's text; the reports are shared, do not change them."""
    key = (hashlib.sha256(source.encode()).digest(), functions, rules)
    found = _SCANS.get(key)
    if found is None:
        found = _SCANS[key] = MappingProxyType(scan(source, functions, rules))
        if len(_SCANS) > _SCANS_KEPT:
            _SCANS.popitem(last=False)
    else:
        _SCANS.move_to_end(key)
    return found


_SCANS: OrderedDict[tuple[bytes, tuple[str, ...], Rules], Mapping[str, ScanReport]] = OrderedDict()
_SCANS_KEPT = 512  # sources x functions of a whole catalogue sweep, with room to spare
