"""Build ``SandboxResult`` values as data, the way the sandbox reports them.

``judge`` is pure: it only reads a result.  These helpers let a test state what a
submission "returned" for each planned call without running any submission.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from graders.base import Plan
from graders.comparison import Case
from graders.tensors import to_raw
from sandbox.api import Call, CallResult, CallStatus, SandboxResult

#: what a fake submission returns for one planned case
Behaviour = Callable[[Case], object]


def returned(call: Call, value: object, ops: tuple[str, ...] = ()) -> CallResult:
    """The CallResult for a call that returned ``value`` (a tensor travels as raw bytes)."""
    if isinstance(value, torch.Tensor):
        return CallResult(call.function, call.label, "ok", "torch.Tensor", to_raw(value), ops=ops)
    kind = type(value).__name__
    return CallResult(call.function, call.label, "ok", kind, ops=ops)


def status(call: Call, status: CallStatus, error: str = "") -> CallResult:
    return CallResult(call.function, call.label, status, error=error)


def correct(case: Case) -> torch.Tensor:
    return case.expected.clone()


def run(
    plan: Plan,
    behaviours: dict[str, Behaviour] | None = None,
    *,
    ops: dict[str, tuple[str, ...]] | None = None,
    results: dict[str, Callable[[Call], CallResult]] | None = None,
) -> SandboxResult:
    """A finished job: each function behaves as given (correct by default).

    ``results`` replaces the whole CallResult for a function (raised, not defined...).
    """
    behaviours, ops, results = behaviours or {}, ops or {}, results or {}
    calls = []
    for call, case in zip(plan.calls, plan.expected["cases"], strict=True):
        if call.function in results:
            calls.append(results[call.function](call))
        else:
            value = behaviours.get(call.function, correct)(case)
            calls.append(returned(call, value, ops.get(call.function, ())))
    return SandboxResult("ok", "", tuple(calls), wall_s=0.25)
