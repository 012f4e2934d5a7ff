"""Strict JSON <-> dataclass conversion for requests, call results and job orders.

The job decodes its request with these functions and the trusted client decodes the job's
results with them, so a malformed or oversized field is rejected the same way everywhere.
Tensor bytes travel in the frame payload, described by dtype and shape in the header, and
are checked by ``RawTensor``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from typing import Any, get_args

from sandbox.api import (
    DTYPE_SIZES,
    Call,
    CallResult,
    CallStatus,
    Limits,
    OpTime,
    RawTensor,
    SandboxRequest,
)
from sandbox.framing import ProtocolError

MAX_SOURCE_CHARS = 4 << 20
MAX_NAME_CHARS = 256
MAX_ERROR_CHARS = 8192
MAX_OPS = 256
MAX_CALLS = 1024
MAX_DIMS = 64
#: operators (and kernels) in one call's profile: the job keeps those with the most self time
MAX_PROFILE_OPS = 48
#: times one operator may have run in one profiled call
MAX_PROFILE_COUNT = 10**9
MAX_PROFILE_PROBLEM_CHARS = 1024
#: a cleaned name's length, ``…`` included (``clean_name``)
CLEAN_NAME_CHARS = 64
#: what ``clean_name`` keeps; every other character becomes ``?`` (the ``…`` that marks a
#: cut name is kept too, so that cleaning a clean name changes nothing)
NAME_SAFE_CHARACTERS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:<>-[](),/ …"
)
_PROFILE_ENTRY_KEYS = frozenset({"name", "self_s", "count", "top_level", "kernel"})

CALL_STATUSES: frozenset[str] = frozenset(get_args(CallStatus))


def clip(text: str, limit: int) -> str:
    """Shorten text to ``limit`` characters keeping its head and its tail."""
    if len(text) <= limit:
        return text
    marker = "\n[... clipped ...]\n"
    head = (limit - len(marker)) // 4
    tail = limit - len(marker) - head
    return text[:head] + marker + text[-tail:]


def field_of(obj: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    """``obj[key]`` if present with exactly this JSON type (bool is not an int here)."""
    if key not in obj:
        raise ProtocolError(f"missing field {key!r}")
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise ProtocolError(f"field {key!r} has the wrong type")
    if not isinstance(value, kinds):
        raise ProtocolError(f"field {key!r} has the wrong type")
    return value


def text_of(obj: dict[str, Any], key: str, limit: int) -> str:
    value = field_of(obj, key, str)
    if len(value) > limit:
        raise ProtocolError(f"field {key!r} is longer than {limit} characters")
    return value


def seconds_of(obj: dict[str, Any], key: str, limit: float = math.inf) -> float:
    """A duration: finite, at least 0 and at most ``limit`` (JSON's NaN, Infinity and a
    400-digit integer included)."""
    value = field_of(obj, key, (int, float))
    if isinstance(value, int) and abs(value) > 1 << 53:  # float() would overflow, or round
        raise ProtocolError(f"field {key!r} is not a valid duration")
    value = float(value)
    if not math.isfinite(value) or not 0 <= value <= limit:
        raise ProtocolError(f"field {key!r} is not a valid duration")
    return value


def count_of(obj: dict[str, Any], key: str, low: int, high: int) -> int:
    value = field_of(obj, key, int)
    if not low <= value <= high:
        raise ProtocolError(f"field {key!r} is out of range")
    return value


def clean_name(text: str) -> str:
    """A name (an operator's, a kernel's, a learner's label) made safe to show anywhere.

    Runs of whitespace of any kind become one space and the ends are stripped; then every
    character but ASCII letters, digits, ``_.:<>-[](),/``, the space and ``…`` becomes
    ``?``; a result longer than CLEAN_NAME_CHARS is cut to that many with ``…`` as its last
    character; an empty one is ``?``.  So no name can ping (``@``), end a code span (a
    backtick), hold a control character or break a line, wherever it is shown; and cleaning
    a clean name changes nothing.
    """
    spaced = " ".join(text.split())
    safe = "".join(c if c in NAME_SAFE_CHARACTERS else "?" for c in spaced)
    if len(safe) > CLEAN_NAME_CHARS:
        safe = safe[: CLEAN_NAME_CHARS - 1] + "…"
    return safe or "?"


def shape_of(obj: Any) -> tuple[str, tuple[int, ...]]:
    if not isinstance(obj, dict):
        raise ProtocolError("tensor description is not an object")
    dtype = field_of(obj, "dtype", str)
    if dtype not in DTYPE_SIZES:
        raise ProtocolError(f"dtype {dtype[:32]!r} is not allowed")
    shape = field_of(obj, "shape", list)
    if len(shape) > MAX_DIMS or any(type(d) is not int or d < 0 for d in shape):
        raise ProtocolError("bad tensor shape")
    return dtype, tuple(shape)


def take_tensor(meta: Any, payload: memoryview, offset: int) -> tuple[RawTensor, int]:
    """Cut the tensor described by ``meta`` out of ``payload`` at ``offset``."""
    dtype, shape = shape_of(meta)
    nbytes = math.prod(shape) * DTYPE_SIZES[dtype]
    if nbytes > len(payload) - offset:
        raise ProtocolError("tensor extends past the payload")
    whole = offset == 0 and nbytes == len(payload) and isinstance(payload.obj, bytes)
    data = payload.obj if whole else bytes(payload[offset : offset + nbytes])
    return RawTensor(dtype, shape, data), offset + nbytes  # type: ignore[arg-type]


def tensor_meta(tensor: RawTensor) -> dict[str, Any]:
    return {"dtype": tensor.dtype, "shape": list(tensor.shape)}


# -- requests ---------------------------------------------------------------------------------


def encode_request(request: SandboxRequest) -> tuple[dict[str, Any], bytes]:
    header = {
        "kind": "request",
        "source": request.source,
        "filename": request.filename,
        "device": request.device,
        "trace_ops": request.trace_ops,
        "limits": asdict(request.limits),
        "calls": [
            {
                "function": call.function,
                "label": call.label,
                "trace": call.trace,
                "profile": call.profile,
                "args": [tensor_meta(arg) for arg in call.args],
            }
            for call in request.calls
        ],
    }
    payload = b"".join(arg.data for call in request.calls for arg in call.args)
    return header, payload


def limits_of(obj: Any) -> Limits:
    if not isinstance(obj, dict) or set(obj) != {f.name for f in fields(Limits)}:
        raise ProtocolError("bad limits")
    values: dict[str, Any] = {}
    for spec in fields(Limits):
        value = field_of(obj, spec.name, (int, float) if spec.type == "float" else int)
        if not math.isfinite(value) or value <= 0:
            raise ProtocolError(f"limit {spec.name} must be positive")
        values[spec.name] = float(value) if spec.type == "float" else value
    return Limits(**values)


def decode_request(header: dict[str, Any], payload: bytes) -> SandboxRequest:
    if header.get("kind") != "request":
        raise ProtocolError("not a job request")
    raw_calls = field_of(header, "calls", list)
    if len(raw_calls) > MAX_CALLS:
        raise ProtocolError("too many calls")
    view, offset, calls = memoryview(payload), 0, []
    for raw in raw_calls:
        if not isinstance(raw, dict):
            raise ProtocolError("call is not an object")
        args = []
        for meta in field_of(raw, "args", list):
            tensor, offset = take_tensor(meta, view, offset)
            args.append(tensor)
        calls.append(
            Call(
                function=text_of(raw, "function", MAX_NAME_CHARS),
                args=tuple(args),
                label=text_of(raw, "label", MAX_NAME_CHARS),
                trace=field_of(raw, "trace", bool),
                profile=field_of(raw, "profile", bool),
            )
        )
    if offset != len(payload):
        raise ProtocolError("request payload has trailing bytes")
    device = field_of(header, "device", str)
    if device not in ("cpu", "cuda"):
        raise ProtocolError("bad device")
    return SandboxRequest(
        source=text_of(header, "source", MAX_SOURCE_CHARS),
        filename=text_of(header, "filename", MAX_NAME_CHARS),
        calls=tuple(calls),
        limits=limits_of(header.get("limits")),
        device=device,
        trace_ops=field_of(header, "trace_ops", bool),
    )


# -- call results -----------------------------------------------------------------------------


def call_to_json(result: CallResult) -> dict[str, Any]:
    """Header fields of a call result; its tensor bytes go in the payload."""
    return {
        "function": result.function,
        "label": result.label,
        "status": result.status,
        "returned_type": result.returned_type,
        "tensor": None if result.tensor is None else tensor_meta(result.tensor),
        "error": result.error,
        "ops": list(result.ops),
        "duration_s": result.duration_s,
        "profile": None if result.profile is None else [op_to_json(op) for op in result.profile],
        "profile_problem": result.profile_problem,
    }


def op_to_json(op: OpTime) -> dict[str, Any]:
    return {
        "name": op.name,
        "self_s": op.self_s,
        "count": op.count,
        "top_level": op.top_level,
        "kernel": op.kernel,
    }


def op_from_json(obj: Any, limit_s: float) -> OpTime:
    """One profile entry as the job sent it (its name not yet cleaned)."""
    if not isinstance(obj, dict) or set(obj) != _PROFILE_ENTRY_KEYS:
        raise ProtocolError("bad profile entry")
    count = count_of(obj, "count", 1, MAX_PROFILE_COUNT)
    kernel = field_of(obj, "kernel", bool)
    return OpTime(
        name=text_of(obj, "name", MAX_NAME_CHARS),
        self_s=seconds_of(obj, "self_s", limit_s),
        count=count,
        top_level=count_of(obj, "top_level", 0, 0 if kernel else count),
        kernel=kernel,
    )


def profile_from_json(
    obj: dict[str, Any], expected: Call, status: str, limit_s: float
) -> tuple[tuple[OpTime, ...] | None, str]:
    """A call's profile and why it has none: only on a call that asked for one and ran, at
    most MAX_PROFILE_OPS distinct entries, each time within ``limit_s`` (the job's wall
    limit); names cleaned here (``clean_name``), entries that cleaning made equal summed,
    sorted by self time, descending."""
    raw = field_of(obj, "profile", (list, type(None)))
    problem = text_of(obj, "profile_problem", MAX_PROFILE_PROBLEM_CHARS)
    if not expected.profile and (raw is not None or problem):
        raise ProtocolError("a profile came with a call that did not ask for one")
    if raw is None:
        return None, problem
    if problem or status not in ("ok", "raised"):
        raise ProtocolError("a profile came with a call that did not run under the profiler")
    if len(raw) > MAX_PROFILE_OPS:
        raise ProtocolError(f"a profile of more than {MAX_PROFILE_OPS} entries")
    sent: set[tuple[str, bool]] = set()
    merged: dict[tuple[str, bool], OpTime] = {}
    for entry in raw:
        op = op_from_json(entry, limit_s)
        if (op.name, op.kernel) in sent:
            raise ProtocolError("a profile lists an operator twice")
        sent.add((op.name, op.kernel))
        key = (clean_name(op.name), op.kernel)
        same = merged.get(key)
        merged[key] = OpTime(
            key[0],
            op.self_s + (same.self_s if same else 0.0),
            op.count + (same.count if same else 0),
            op.top_level + (same.top_level if same else 0),
            op.kernel,
        )
    ordered = sorted(merged.values(), key=lambda op: (-op.self_s, op.name, op.kernel))
    return tuple(ordered), ""


def call_from_json(
    obj: Any, payload: memoryview, offset: int, expected: Call, limit_s: float
) -> tuple[CallResult, int]:
    """Validate one call result against the call that was asked for; ``limit_s`` bounds
    every time it reports (the job's wall limit)."""
    if not isinstance(obj, dict):
        raise ProtocolError("call result is not an object")
    if obj.get("function") != expected.function or obj.get("label") != expected.label:
        raise ProtocolError("call result does not match the requested call")
    status = field_of(obj, "status", str)
    if status not in CALL_STATUSES:
        raise ProtocolError("bad call status")
    ops = field_of(obj, "ops", list)
    if len(ops) > MAX_OPS or any(not isinstance(op, str) or len(op) > MAX_NAME_CHARS for op in ops):
        raise ProtocolError("bad ops list")
    tensor = None
    if obj.get("tensor") is not None:
        if status != "ok":
            raise ProtocolError("a tensor came with a failed call")
        tensor, offset = take_tensor(obj["tensor"], payload, offset)
    profile, problem = profile_from_json(obj, expected, status, limit_s)
    result = CallResult(
        function=expected.function,
        label=expected.label,
        status=status,  # type: ignore[arg-type]  # checked against CALL_STATUSES
        returned_type=text_of(obj, "returned_type", MAX_NAME_CHARS),
        tensor=tensor,
        error=text_of(obj, "error", MAX_ERROR_CHARS),
        ops=tuple(ops),
        duration_s=seconds_of(obj, "duration_s"),
        profile=profile,
        profile_problem=problem,
    )
    return result, offset


# -- job orders (client -> zygote) ---------------------------------------------------------


class JobKind(StrEnum):
    """What the job process does with its feed."""

    CALLS = "calls"  # read one request, run its calls (``Runner.run``)
    TURN = "turn"  # read a turn, then answer inputs until the feed closes (``Runner.serve_feed``)


@dataclass(frozen=True)
class JobOrder:
    """What the zygote needs to start a job; the job's data never travels with it."""

    kind: JobKind
    limits: Limits
    device: str  # "cpu" or "cuda", as the client chose from the zygote's ready report
    pinned: bool  # on the job core (speed-trial turns)


def order_to_json(order: JobOrder) -> dict[str, Any]:
    return {
        "kind": "job",
        "job": order.kind.value,
        "limits": asdict(order.limits),
        "device": order.device,
        "pinned": order.pinned,
    }


def order_from_json(header: dict[str, Any]) -> JobOrder:
    if header.get("kind") != "job":
        raise ProtocolError("not a job order")
    kind = field_of(header, "job", str)
    if kind not in {k.value for k in JobKind}:
        raise ProtocolError("bad job kind")
    device = field_of(header, "device", str)
    if device not in ("cpu", "cuda"):
        raise ProtocolError("bad device")
    return JobOrder(
        JobKind(kind), limits_of(header.get("limits")), device, field_of(header, "pinned", bool)
    )
