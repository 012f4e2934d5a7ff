"""Run a submission's functions on a grader's plan in this process, without the sandbox.

Only for our own catalogue of correct styles and common mistakes (trusted code we wrote),
so that a grader's plan and judge can be swept over hundreds of seeds in seconds.  The
result is built exactly as the sandbox reports one: raw bytes, never live tensors.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from types import CodeType, FunctionType, ModuleType

import torch

from graders.base import Plan
from graders.tensors import from_raw, to_raw
from sandbox.api import Call, CallResult, RawTensor, SandboxResult

FILENAME = "submission.py"


def load(source: str, name: str = "submission") -> ModuleType:
    """``source`` executed as a fresh module: later top-level defs replace earlier ones."""
    module = ModuleType(name)
    module.__file__ = FILENAME
    exec(compile(source, FILENAME, "exec"), module.__dict__)
    return module


@dataclass
class CallMemo:
    """Calls a sweep meets again as the very same objects (a grader's fixed call, built
    once and put in every plan), with each module's result: a module runs each of them
    once.  ``calls`` holds them by id, and keeps them alive so that no other call takes
    their id; ``results`` is by (module, call) id."""

    calls: dict[int, Call]
    results: dict[tuple[int, int], CallResult] = field(default_factory=dict)


def run_plan(
    module: ModuleType,
    plan: Plan,
    *,
    reuse: SandboxResult | None = None,
    same: frozenset[str] = frozenset(),
    memo: CallMemo | None = None,
) -> SandboxResult:
    """Every planned call on fresh copies of its inputs, one after another.  The calls of
    the functions in ``same`` are taken from ``reuse`` (a result of a module where those
    functions are the same, see ``same_functions``) instead of being run again, and a call
    ``memo`` holds is run once per module (our catalogue's functions are deterministic)."""
    with torch.no_grad():
        calls = tuple(
            reuse.calls[i]
            if reuse is not None and call.function in same
            else _remembered(module, call, memo)
            for i, call in enumerate(plan.calls)
        )
    return SandboxResult("ok", "", calls, wall_s=0.0)


def _remembered(module: ModuleType, call: Call, memo: CallMemo | None) -> CallResult:
    if memo is None or memo.calls.get(id(call)) is not call:
        return _call(module, call)
    key = (id(module), id(call))
    if key not in memo.results:
        memo.results[key] = _call(module, call)
    return memo.results[key]


def same_functions(a: ModuleType, b: ModuleType, names: tuple[str, ...]) -> frozenset[str]:
    """The functions among ``names`` that compute the same in both modules: the same code,
    calling (through module globals, transitively) the same code and the same constants."""
    return frozenset(
        n for n in names if _same(getattr(a, n, None), getattr(b, n, None), a, b, set())
    )


def _same(x: object, y: object, a: ModuleType, b: ModuleType, seen: set[str]) -> bool:
    if isinstance(x, ModuleType) or isinstance(y, ModuleType):
        return x is y
    if isinstance(x, FunctionType) and isinstance(y, FunctionType):
        if x.__code__ != y.__code__ or x.__defaults__ != y.__defaults__:
            return False
        return all(_same_global(name, a, b, seen) for name in _global_names(x.__code__))
    if isinstance(x, int | float | str | bytes | bool | type(None)):
        return type(x) is type(y) and x == y
    return x is y


def _same_global(name: str, a: ModuleType, b: ModuleType, seen: set[str]) -> bool:
    if name in seen:
        return True
    seen.add(name)
    missing = object()
    x, y = a.__dict__.get(name, missing), b.__dict__.get(name, missing)
    if x is missing or y is missing:
        return x is y  # a builtin in both, or missing from both
    return _same(x, y, a, b, seen)


def _global_names(code: CodeType) -> set[str]:
    """Every name a function's code (nested functions and lambdas included) may look up."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= _global_names(const)
    return names


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
