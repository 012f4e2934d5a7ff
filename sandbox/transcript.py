"""The client's reading of a job's result stream, checked frame by frame.

The stream is written by the job process, which the submission controls, so
every frame must fit the request: the right kind at the right moment, one
result per requested call in order, tensors within the output budget.
Anything else is a protocol error and ends the job.
"""

from __future__ import annotations

from typing import Any

from sandbox.api import Call, CallResult, Limits, SandboxRequest
from sandbox.codec import MAX_ERROR_CHARS, call_from_json, field_of, text_of
from sandbox.framing import OversizeError, ProtocolError


class Transcript:
    def __init__(self, request: SandboxRequest | None, limits: Limits) -> None:
        """``request`` is None for the zygote's own probe job, which sends facts instead (the
        one job whose stream the zygote reads itself)."""
        self.request = request
        self.remaining_output = limits.output_bytes
        self.wall_s = limits.wall_s  # no time a job reports can be longer
        self.loaded = False
        self.load_error = ""
        self.calls: list[CallResult] = []
        self.done = False
        self.memory = False  # the job reported a MemoryError-like failure
        self.facts: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.done or bool(self.load_error) or self.facts is not None

    def accept(self, header: dict[str, Any], payload: bytes) -> None:
        kind = header.get("kind")
        if self.finished:
            raise ProtocolError("frame after the end of the job")
        if self.request is None:
            if kind != "probe":
                raise ProtocolError(f"unexpected {str(kind)[:40]!r} frame")
            self.facts = field_of(header, "facts", dict)
            return
        calls = self.request.calls
        if kind == "load_error" and not self.loaded:
            self.load_error = text_of(header, "error", MAX_ERROR_CHARS) or "load failed"
            self.memory = field_of(header, "memory", bool)
        elif kind == "loaded" and not self.loaded:
            self.loaded = True
        elif kind == "call" and self.loaded and len(self.calls) < len(calls):
            self._accept_call(header, payload, calls[len(self.calls)])
        elif kind == "done" and self.loaded and len(self.calls) == len(calls):
            self.done = True
        else:
            raise ProtocolError(f"unexpected {str(kind)[:40]!r} frame")

    def _accept_call(self, header: dict[str, Any], payload: bytes, expected: Call) -> None:
        if len(payload) > self.remaining_output:
            raise OversizeError("returned tensors exceed the output limit")
        call, end = call_from_json(header, memoryview(payload), 0, expected, self.wall_s)
        if end != len(payload):
            raise ProtocolError("call payload does not match its tensor")
        self.remaining_output -= len(payload)
        self.memory |= field_of(header, "memory", bool)
        self.calls.append(call)
