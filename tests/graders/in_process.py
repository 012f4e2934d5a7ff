"""Run a submission's functions on a grader's plan in this process, without the sandbox.

Only for our own catalogue of correct styles and common mistakes (trusted code we wrote),
so that a grader's plan and judge can be swept over hundreds of seeds in seconds.  The
result is built exactly as the sandbox reports one: raw bytes, never live tensors.
"""

from __future__ import annotations

import traceback
from types import ModuleType

import torch

from bot.sandbox.api import Call, CallResult, RawTensor, SandboxResult
from graders.base import Plan
from graders.tensors import from_raw, to_raw

FILENAME = "submission.py"


def load(source: str, name: str = "submission") -> ModuleType:
    """``source`` executed as a fresh module: later top-level defs replace earlier ones."""
    module = ModuleType(name)
    module.__file__ = FILENAME
    exec(compile(source, FILENAME, "exec"), module.__dict__)
    return module


def run_plan(module: ModuleType, plan: Plan) -> SandboxResult:
    """Every planned call on fresh copies of its inputs, one after another."""
    with torch.no_grad():
        calls = tuple(_call(module, call) for call in plan.calls)
    return SandboxResult("ok", "", calls, wall_s=0.0)


def _call(module: ModuleType, call: Call) -> CallResult:
    function = getattr(module, call.function, None)
    if function is None:
        return CallResult(call.function, call.label, "not_defined")
    if not callable(function):
        return CallResult(call.function, call.label, "not_callable", type(function).__name__)
    args = [from_raw(raw) for raw in call.args]
    try:
        value = function(*args)
    except Exception:  # the learner's exception is a result, as in the sandbox
        return CallResult(call.function, call.label, "raised", error=traceback.format_exc())
    if isinstance(value, torch.Tensor):
        raw: RawTensor = to_raw(value)
        return CallResult(call.function, call.label, "ok", "torch.Tensor", raw)
    return CallResult(call.function, call.label, "ok", type(value).__name__)
