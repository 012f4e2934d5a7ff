"""Speed-trial turns, the worker's side: the clock that ranks runs here.

``Zygote.turn(spec)`` opens a turn (``bot.sandbox.turns``): a fresh confined job that has
loaded ``spec.source``.  ``Turn.call(args)`` starts this process's clock, writes the inputs
straight into the job's feed, waits for the result bytes on the job's own pipe and stops the
clock: the job can neither see nor touch that clock, and the bytes it sent are final, so the
time covers all the work the result needed, and no other process relays anything in between.
Torch-free: tensors cross as ``RawTensor`` bytes and are checked by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter

from bot.sandbox.api import RawTensor, SandboxRequest
from bot.sandbox.channel import JobChannel
from bot.sandbox.codec import JobKind, JobOrder
from bot.sandbox.control import Control
from bot.sandbox.framing import frame_chunks
from bot.sandbox.turns import TurnOutput, TurnSpec, TurnTranscript, encode_inputs, encode_turn
from bot.sandbox.verdict import status_of


@dataclass(frozen=True)
class TurnOver:
    """How a turn ended: "ok" when the worker ended it, else why the job stopped."""

    status: str
    message: str
    stdout: str = ""
    stderr: str = ""


class Turn:
    """One open turn; not thread-safe (the zygote's lock is held while it is open)."""

    def __init__(
        self,
        spec: TurnSpec,
        channel: JobChannel | None = None,
        over: TurnOver | None = None,
    ) -> None:
        """``channel`` for a turn that started; ``over`` for one that could not (every call
        then answers None at once)."""
        self.spec = spec
        self.channel = channel
        self.transcript = TurnTranscript(spec.limits)
        self.over = over

    @classmethod
    def start(cls, spec: TurnSpec, control: Control, device: str) -> Turn:
        """Start the turn's job and wait until it has loaded its source (or failed to)."""
        turn = cls(spec)
        order = JobOrder(JobKind.TURN, spec.limits, device, pinned=True)
        turn.channel = JobChannel(control, order, turn.transcript)
        turn.channel.send(frame_chunks(encode_turn(spec)))
        if not turn.channel.pump_until(lambda: turn.transcript.loaded):
            turn._end()
        return turn

    @property
    def loaded(self) -> bool:
        return self.over is None

    @property
    def open(self) -> bool:
        """The job may still run: neither ended nor failed to start."""
        return self.channel is not None and not self.channel.closed

    def call(self, args: tuple[RawTensor, ...]) -> tuple[float, TurnOutput | None]:
        """Seconds from sending ``args`` to holding the result, and the result; None when
        the job stopped instead (``over`` says why)."""
        if self.over is not None or self.channel is None:
            return 0.0, None
        transcript = self.transcript
        chunks = frame_chunks(*encode_inputs(args))
        transcript.sent += 1
        started = perf_counter()
        self.channel.send(chunks)
        arrived = self.channel.pump_until(lambda: len(transcript.calls) == transcript.sent)
        seconds = perf_counter() - started
        if arrived:
            return seconds, transcript.calls[-1]
        self._end()
        return seconds, None

    def end(self) -> TurnOver:
        if self.over is None:
            self._end()
        assert self.over is not None
        return self.over

    def _end(self) -> None:
        channel, transcript = self.channel, self.transcript
        assert channel is not None
        transcript.done = transcript.loaded and channel.life is None and not channel.streams.broken
        obs = channel.finish()
        spec = self.spec
        request = SandboxRequest(spec.source, spec.filename, (), spec.limits, "cpu")
        status, message = status_of(request, obs, transcript)  # type: ignore[arg-type]
        if status not in ("ok", "load_error") and transcript.loaded:
            message = f"{message} during timed run {len(transcript.calls) + 1}"
        stdout, stderr = (bytes(b).decode("utf-8", "replace") for b in (obs.stdout, obs.stderr))
        self.over = TurnOver(status, message, stdout, stderr)
