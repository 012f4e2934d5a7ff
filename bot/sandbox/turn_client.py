"""Speed-trial turns, the worker's side: the clock that ranks runs here.

``Zygote.turn(spec)`` opens a turn (``bot.sandbox.turns``): a fresh confined job that has
loaded ``spec.source``.  ``Turn.call(args)`` starts this process's clock, sends the inputs,
waits for the result bytes and stops the clock: the job can neither see nor touch that clock,
and the bytes it sent are final, so the time covers all the work the result needed.
Torch-free: tensors cross as ``RawTensor`` bytes and are checked by the caller.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from time import perf_counter
from typing import Any

from bot.sandbox import framing
from bot.sandbox.api import RawTensor
from bot.sandbox.codec import MAX_ERROR_CHARS, field_of, text_of
from bot.sandbox.framing import FrameReader, ProtocolError
from bot.sandbox.turns import TurnOutput, TurnSpec, decode_output, encode_inputs, encode_turn

HEADER_MAX = 1 << 20
MARGIN_S = 30.0


@dataclass(frozen=True)
class TurnOver:
    """How a turn ended: "ok" when the worker ended it, else why the job stopped."""

    status: str
    message: str
    stdout: str = ""
    stderr: str = ""


class Turn:
    """One open turn; not thread-safe (the zygote's lock is held while it is open)."""

    def __init__(self, spec: TurnSpec, pipes: tuple[int, int], over: TurnOver | None = None):
        """``pipes``: the zygote's request and reply descriptors; ``over`` for a turn that
        could not open (every call then answers None at once)."""
        self._out, self._in = pipes
        self.spec = spec
        self.over = over
        self._reader = FrameReader(HEADER_MAX, spec.limits.output_bytes)

    @property
    def loaded(self) -> bool:
        return self.over is None

    def open(self) -> None:
        framing.write_frame(self._out, encode_turn(self.spec))
        header, _ = self._read()
        if header.get("kind") != "loaded":
            self._ended(header)

    def call(self, args: tuple[RawTensor, ...]) -> tuple[float, TurnOutput | None]:
        """Seconds from sending ``args`` to holding the result, and the result; None when
        the job stopped instead (``over`` says why)."""
        if self.over is not None:
            return 0.0, None
        header, payload = encode_inputs(args)
        started = perf_counter()
        framing.write_frame(self._out, header, payload)
        reply, reply_payload = self._read()
        seconds = perf_counter() - started
        if reply.get("kind") == "output":
            return seconds, decode_output(reply, reply_payload, self.spec.limits.output_bytes)
        self._ended(reply)
        return seconds, None

    def end(self) -> TurnOver:
        if self.over is None:
            framing.write_frame(self._out, {"kind": "end"})
            self._ended(self._read()[0])
        assert self.over is not None
        return self.over

    def _read(self) -> tuple[dict[str, Any], bytes]:
        frame = framing.read_frame(
            self._in, self._reader, time.monotonic() + self.spec.limits.wall_s + MARGIN_S
        )
        if frame is None:
            raise EOFError("the zygote closed its output")
        return frame

    def _ended(self, header: dict[str, Any]) -> None:
        kind = header.get("kind")
        if kind == "error":
            message = text_of(header, "message", MAX_ERROR_CHARS)
            self.over = TurnOver("internal_error", f"the sandbox refused the turn: {message}")
            return
        if kind != "turn_over":
            raise ProtocolError(f"unexpected {str(kind)[:40]!r} frame in a turn")
        limit = self.spec.limits.stdout_bytes * 4
        self.over = TurnOver(
            field_of(header, "status", str)[:32],
            text_of(header, "message", MAX_ERROR_CHARS),
            text_of(header, "stdout", limit),
            text_of(header, "stderr", limit),
        )
