"""Speed-trial turns: one job per side of a trial, held between its calls (frames, checks).

A speed trial (``bot.worker.speed_trial``) races a trusted reference against the learner's
function, each in a confined job of its own pinned to the job core.  A turn's job reads its
``turn`` frame (source, function, the shapes of its inputs), allocates one buffer per input,
loads the source and says ``loaded`` with the buffers' addresses.  From then on the worker
holds it (``sandbox.held_process``): stopped, every thread of it, except while one of its
calls runs.  For each call the worker writes fresh inputs into the stopped job's buffers,
sends a ``go`` frame with a fresh nonce, starts its clock and resumes the job; the job calls
the function and answers ``returned`` (where the result lies in its memory, its dtype and
shape) or ``raised``, echoing the nonce; the worker stops the job, stops its clock, and only
then reads the result's bytes out of the job's memory, and lets the job free it (a
``release``, untimed: the next inputs are not yet written).  So the clock covers every
instruction the result needed and nothing the job does can move bytes faster or later, the
inputs exist nowhere the job could see before the clock starts, and an answer written
before its ``go`` cannot carry the nonce.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sandbox.api import DTYPE_SIZES, Limits
from sandbox.codec import (
    MAX_ERROR_CHARS,
    MAX_NAME_CHARS,
    MAX_SOURCE_CHARS,
    field_of,
    shape_of,
    text_of,
)
from sandbox.framing import OversizeError, ProtocolError

MAX_ARGS = 16
NONCE_CHARS = 32


@dataclass(frozen=True)
class TensorShape:
    """A dense tensor's dtype and shape: an input buffer, or what a call must return."""

    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPE_SIZES[self.dtype]

    def to_json(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "shape": list(self.shape)}

    @classmethod
    def from_json(cls, obj: Any) -> TensorShape:
        dtype, shape = shape_of(obj)
        return cls(dtype, shape)


@dataclass(frozen=True)
class TurnSpec:
    """What one side of a trial runs: a source (the learner's or a trusted reference), the
    function, and the dtype and shape of each input it is called with."""

    source: str
    filename: str
    function: str
    limits: Limits
    device: str = "cpu"
    inputs: tuple[TensorShape, ...] = ()


@dataclass(frozen=True)
class TurnSource:
    """What a turn's job reads first from its feed (its limits travel in the job's order)."""

    source: str
    filename: str
    function: str
    inputs: tuple[TensorShape, ...]


@dataclass(frozen=True)
class Answer:
    """One call's answer as the job states it (untrusted: the worker reads the bytes itself
    and checks them): where the returned tensor lies, or the error it raised."""

    nonce: str
    status: str  # "returned" or "raised"
    address: int = 0
    tensor: TensorShape | None = None
    error: str = ""


def encode_turn(spec: TurnSpec) -> dict[str, Any]:
    return {
        "kind": "turn",
        "source": spec.source,
        "filename": spec.filename,
        "function": spec.function,
        "inputs": [shape.to_json() for shape in spec.inputs],
    }


def decode_turn(header: dict[str, Any]) -> TurnSource:
    if header.get("kind") != "turn":
        raise ProtocolError("not a turn")
    inputs = field_of(header, "inputs", list)
    if len(inputs) > MAX_ARGS:
        raise ProtocolError("too many arguments")
    return TurnSource(
        source=text_of(header, "source", MAX_SOURCE_CHARS),
        filename=text_of(header, "filename", MAX_NAME_CHARS),
        function=text_of(header, "function", MAX_NAME_CHARS),
        inputs=tuple(TensorShape.from_json(item) for item in inputs),
    )


def encode_go(nonce: str) -> dict[str, Any]:
    return {"kind": "go", "nonce": nonce}


def decode_go(header: dict[str, Any]) -> str:
    """The nonce of a ``go``; "" for a ``release``."""
    if header.get("kind") == "release":
        return ""
    if header.get("kind") != "go":
        raise ProtocolError("not a go frame")
    return text_of(header, "nonce", NONCE_CHARS)


RELEASE = {"kind": "release"}  # untimed, after a result was read: the job may free it


def encode_answer(answer: Answer) -> dict[str, Any]:
    header: dict[str, Any] = {"kind": answer.status, "nonce": answer.nonce}
    if answer.status == "returned" and answer.tensor is not None:
        header |= {"address": answer.address, "tensor": answer.tensor.to_json()}
    else:
        header["error"] = answer.error
    return header


def _address(header: dict[str, Any]) -> int:
    address = field_of(header, "address", int)
    if not 0 <= address < 1 << 64:
        raise ProtocolError("bad address")
    return address


class TurnTranscript:
    """The worker's reading of a turn job's result stream: ``loaded`` with its input buffers
    (or ``load_error``), then exactly one answer per ``go``, carrying that go's nonce, never
    before it.  Shaped like ``Transcript`` where ``verdict.status_of`` reads it."""

    def __init__(self, limits: Limits, inputs: tuple[TensorShape, ...] = ()) -> None:
        self.limits = limits
        self.inputs = inputs
        self.remaining_output = 0  # no frame of a turn carries a payload
        self.loaded = False
        self.load_error = ""
        self.memory = False
        self.buffers: tuple[int, ...] = ()  # the job's input buffers, one per input
        self.awaiting = ""  # the nonce of the go sent and not yet answered
        self.releasing = False  # a release sent and not yet answered
        self.released = 0
        self.answers: list[Answer] = []
        self.done = False  # the worker ended the turn while the job still served it
        self.facts = None

    @property
    def finished(self) -> bool:
        return self.done or bool(self.load_error)

    @property
    def calls(self) -> list[Answer]:
        return self.answers

    def accept(self, header: dict[str, Any], payload: bytes) -> None:
        kind = header.get("kind")
        if payload:
            raise OversizeError("a turn's frames carry no payload")
        if kind == "load_error" and not self.loaded and not self.load_error:
            self.load_error = text_of(header, "error", MAX_ERROR_CHARS) or "load failed"
            self.memory = field_of(header, "memory", bool)
        elif kind == "loaded" and not self.loaded and not self.load_error:
            buffers = field_of(header, "buffers", list)
            if len(buffers) != len(self.inputs):
                raise ProtocolError("one buffer per input")
            self.buffers = tuple(_address({"address": b}) for b in buffers)
            self.loaded = True
        elif kind == "released" and self.releasing:
            self.releasing = False
            self.released += 1
        elif kind in ("returned", "raised") and self.loaded and self.awaiting:
            nonce = text_of(header, "nonce", NONCE_CHARS)
            if nonce != self.awaiting:
                raise ProtocolError("an answer that is not to the call that was made")
            self.memory |= field_of(header, "memory", bool)
            if kind == "returned":
                tensor = TensorShape.from_json(header.get("tensor"))
                answer = Answer(nonce, "returned", _address(header), tensor)
            else:
                answer = Answer(nonce, "raised", error=text_of(header, "error", MAX_ERROR_CHARS))
            self.awaiting = ""
            self.answers.append(answer)
        else:
            raise ProtocolError(f"unexpected {str(kind)[:40]!r} frame")
