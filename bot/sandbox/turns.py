"""Speed-trial turns: one fresh job per turn, fed inputs on demand (the frames and their checks).

A speed trial (``bot.grading.speed_trial``) alternates turns of a trusted reference and of the
learner's function.  Each turn is a new confined job pinned to the job core: it reads its
``turn`` frame (source, function) from its feed, loads the source and says "loaded"; only then
does the worker send it inputs, one ``inputs`` frame at a time, straight down the feed, and
the job answers each with one ``output`` frame on its result pipe.  The worker's clock runs
from sending an input to holding the result bytes, so nothing the job does to its own clocks
counts, and because the inputs do not exist anywhere before the job has loaded (the zygote
never sees them), no import-time work can get ahead of them.  When the worker ends the turn
the job is killed with everything it started, so no thread or process of the learner's is
alive during a reference turn, and no cache outlives a turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bot.sandbox import framing
from bot.sandbox.api import Limits, RawTensor
from bot.sandbox.codec import (
    MAX_ERROR_CHARS,
    MAX_NAME_CHARS,
    MAX_SOURCE_CHARS,
    field_of,
    take_tensor,
    tensor_meta,
    text_of,
)
from bot.sandbox.framing import FrameReader, OversizeError, ProtocolError

MAX_ARGS = 16


@dataclass(frozen=True)
class TurnSpec:
    """What one turn runs: a source (the learner's or a trusted reference) and a function."""

    source: str
    filename: str
    function: str
    limits: Limits
    device: str = "cpu"


@dataclass(frozen=True)
class TurnOutput:
    """One call's answer, read from the job (untrusted: the worker checks the tensor)."""

    status: str  # "ok" or "raised"
    tensor: RawTensor | None
    error: str = ""


@dataclass(frozen=True)
class TurnSource:
    """What a turn's job reads first from its feed (its limits travel in the job's order)."""

    source: str
    filename: str
    function: str


def encode_turn(spec: TurnSpec) -> dict[str, Any]:
    return {
        "kind": "turn",
        "source": spec.source,
        "filename": spec.filename,
        "function": spec.function,
    }


def decode_turn(header: dict[str, Any]) -> TurnSource:
    if header.get("kind") != "turn":
        raise ProtocolError("not a turn")
    return TurnSource(
        source=text_of(header, "source", MAX_SOURCE_CHARS),
        filename=text_of(header, "filename", MAX_NAME_CHARS),
        function=text_of(header, "function", MAX_NAME_CHARS),
    )


def encode_inputs(args: tuple[RawTensor, ...]) -> tuple[dict[str, Any], bytes]:
    payload = args[0].data if len(args) == 1 else b"".join(a.data for a in args)
    return {"kind": "inputs", "args": [tensor_meta(a) for a in args]}, payload


def decode_inputs(header: dict[str, Any], payload: bytes) -> tuple[RawTensor, ...]:
    metas = field_of(header, "args", list)
    if len(metas) > MAX_ARGS:
        raise ProtocolError("too many arguments")
    view, offset, args = memoryview(payload), 0, []
    for meta in metas:
        tensor, offset = take_tensor(meta, view, offset)
        args.append(tensor)
    if offset != len(payload):
        raise ProtocolError("inputs payload has trailing bytes")
    return tuple(args)


def encode_output(output: TurnOutput) -> tuple[dict[str, Any], bytes]:
    tensor = output.tensor
    header = {
        "kind": "output",
        "status": output.status,
        "error": output.error,
        "tensor": None if tensor is None else tensor_meta(tensor),
    }
    return header, (tensor.data if tensor is not None else b"")


def decode_output(header: dict[str, Any], payload: bytes, max_bytes: int) -> TurnOutput:
    """Validate one output frame from the job."""
    if header.get("kind") != "output":
        raise ProtocolError("not an output frame")
    status = field_of(header, "status", str)
    if status not in ("ok", "raised"):
        raise ProtocolError("bad output status")
    if len(payload) > max_bytes:
        raise OversizeError("the returned tensor exceeds the output limit")
    tensor = None
    if header.get("tensor") is not None:
        tensor, end = take_tensor(header["tensor"], memoryview(payload), 0)
        if end != len(payload):
            raise ProtocolError("output payload has trailing bytes")
    elif payload:
        raise ProtocolError("output payload without a tensor")
    return TurnOutput(status, tensor, text_of(header, "error", MAX_ERROR_CHARS))


class TurnTranscript:
    """The worker's reading of a turn job's result stream: "loaded" (or "load_error"), then
    exactly one output per inputs frame sent, never ahead of it.  Shaped like
    ``Transcript`` where ``verdict.status_of`` reads it."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.remaining_output = limits.output_bytes
        self.loaded = False
        self.load_error = ""
        self.memory = False
        self.calls: list[TurnOutput] = []  # the outputs, in order
        self.sent = 0  # inputs frames sent to the job
        self.done = False  # the worker ended the turn while the job still served it
        self.facts = None

    @property
    def finished(self) -> bool:
        return self.done or bool(self.load_error)

    def accept(self, header: dict[str, Any], payload: bytes) -> None:
        kind = header.get("kind")
        if kind == "load_error" and not self.loaded and not self.load_error:
            self.load_error = text_of(header, "error", MAX_ERROR_CHARS) or "load failed"
            self.memory = field_of(header, "memory", bool)
        elif kind == "loaded" and not self.loaded:
            self.loaded = True
        elif kind == "output" and self.loaded and len(self.calls) < self.sent:
            self.memory |= field_of(header, "memory", bool)
            self.calls.append(decode_output(header, payload, self.limits.output_bytes))
        else:
            raise ProtocolError(f"unexpected {str(kind)[:40]!r} frame")


def feed_frames(fd: int, reader: FrameReader) -> Iterator[tuple[RawTensor, ...]]:
    """The job's side: each inputs frame from the feed, until the worker closes it."""
    while (frame := framing.read_frame(fd, reader)) is not None:
        yield decode_inputs(*frame)
