"""Grader for go-brrrr/matmul-three-ways: one matrix product, written three ways.

Scoring: two checks per function, six in all, and ``score`` is the fraction passed.

* ``<function>: correct results``: all 12 cases (6 shape classes x float32/float64)
  match ``torch.matmul`` in float64 within a dtype-suited tolerance.
* ``<function>: builds the product itself``: no whole-matrix product, by the static
  scan and the sandbox's op record (see ``graders.source_scan``).  It is awarded only
  when the results are correct too, so a stub that returns nothing earns nothing.

The verdict is ``passed`` when all six pass, ``error`` only when the sandbox itself
failed, and ``failed`` otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.sandbox.api import GiB, Limits, SandboxResult
from graders.base import Check, Plan, Verdict
from graders.cases import by_function, match_results, recorded_ops, verdict_from_checks
from graders.job_status import job_verdict
from graders.matmul_cases import SHAPES, ExpectedCase, build_cases
from graders.matmul_compare import Outcome, compare
from graders.source_scan import ScanReport, forbidden_ops, scan

METHODS: dict[str, str] = {
    "matmul_loops": "three nested loops, C[i, j] += A[i, k] * B[k, j]",
    "matmul_dot": "one 1-D dot product per entry, C[i, j] = torch.dot(A[i], B[:, j])",
    "matmul_columns": (
        "each column a weighted sum of A's columns, C[:, j] = sum over k of B[k, j] * A[:, k]"
    ),
}
PASSED_FEEDBACK = (
    "All three are right. They do the same m*n*k multiply-adds, yet matmul_loops runs every "
    "one as a separate Python step, matmul_dot hands each inner sum to one torch.dot call, "
    "and matmul_columns does one vector operation per (k, j) pair. Time them on 256x256 "
    "inputs: the fewer trips through the Python interpreter, the faster it goes."
)
_MAX_LISTED = 4
_NO_RESULT = Outcome(False, "no result came back for this case")


class MatmulThreeWays:
    name = "matmul_three_ways"
    interface: tuple[str, ...] = tuple(METHODS)
    limits = Limits(wall_s=10.0, cpu_s=10.0, memory_bytes=2 * GiB)
    needs_cuda = False

    def plan(self, seed: int, device: str) -> Plan:
        """Fresh inputs from ``seed``; they live on the CPU whatever ``device`` the job uses."""
        calls, expected = build_cases(self.interface, seed)
        return Plan(calls=calls, expected={"cases": expected})

    def judge(self, task: str, plan: Plan, result: SandboxResult, source: str) -> Verdict:
        early = job_verdict(task, result)
        if early is not None:
            return early
        cases: tuple[ExpectedCase, ...] = plan.expected["cases"]
        results = match_results(plan, result)
        reports = scan(source, self.interface)
        checks: list[Check] = []
        for function, mine in by_function(self.interface, cases, results).items():
            outcomes = [(c, _NO_RESULT if r is None else compare(c, r)) for c, r in mine]
            correct = _correctness(function, outcomes)
            ops = forbidden_ops(recorded_ops(mine))
            checks += [correct, _method(function, reports[function], ops, correct.passed)]
        return verdict_from_checks(task, checks, result, PASSED_FEEDBACK)


def _correctness(function: str, outcomes: Sequence[tuple[ExpectedCase, Outcome]]) -> Check:
    name = f"{function}: correct results"
    failed = [(c, o) for c, o in outcomes if not o.ok]
    if not failed:
        kinds = ", ".join(SHAPES)
        return Check(name, True, f"all {len(outcomes)} cases correct ({kinds}; float32, float64)")
    case, first = failed[0]
    if first.per_function:
        return Check(name, False, f"{function} {first.detail}: {first.hint}")
    message = f"failed {len(failed)} of {len(outcomes)} cases. {case.case.label}: {first.detail}"
    if first.hint:
        message += f". Hint: {first.hint}"
    others = [c.case.label for c, _ in failed[1:]]
    if others:
        listed = "; ".join(others[:_MAX_LISTED])
        more = len(others) - _MAX_LISTED
        message += f". Also failing: {listed}" + (f" and {more} more" if more > 0 else "")
    return Check(name, False, message)


def _method(function: str, report: ScanReport, ops: tuple[str, ...], correct: bool) -> Check:
    name = f"{function}: builds the product itself"
    how = f"Build it with {METHODS[function]}."
    if report.problem:
        return Check(name, False, f"{report.problem}. {how}")
    if not report.found:
        reason = "it is defined at run time, not as a top-level def" if correct else "not found"
        return Check(name, False, f"not checked: {reason}. {how}")
    problems = [str(f) for f in report.findings]
    if ops:
        problems.append(f"while it ran, torch recorded {', '.join(ops)}")
    if problems:
        listed = "; ".join(problems)
        return Check(name, False, f"{function} uses a whole-matrix product ({listed}). {how}")
    if not correct:
        return Check(name, False, "no whole-matrix product seen; it counts once results are right")
    return Check(name, True, f"no whole-matrix product: {METHODS[function]}")
