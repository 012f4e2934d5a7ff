"""Speed-trial turns, the worker's side: the clock that ranks runs here.

``Zygote.turn(spec)`` opens a turn (``sandbox.turns``): a confined job that has loaded
``spec.source`` and allocated its input buffers, then stopped by this process.  Each
``Turn.call`` writes the inputs into the stopped job, starts this process's clock, resumes
the job, waits (spinning, so no wake-up is timed) for its answer, stops every thread of it
and only then stops the clock and reads the result's bytes out of its memory.  Nothing in
the job can reach this clock, deliver its inputs faster, or finish a result after the clock
stopped.  Torch-free: the caller passes addresses of its own buffers and checks the bytes.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from time import perf_counter

from sandbox.api import SandboxRequest
from sandbox.channel import JobChannel
from sandbox.codec import JobKind, JobOrder
from sandbox.control import Control
from sandbox.framing import frame_chunks
from sandbox.held_process import HeldProcess, HeldProcessError
from sandbox.turns import (
    RELEASE,
    Answer,
    TensorShape,
    TurnSpec,
    TurnTranscript,
    encode_go,
    encode_turn,
)
from sandbox.verdict import status_of

#: how long a job may take to free a result (a munmap: well under a millisecond)
RELEASE_LIMIT_S = 1.0
#: the job's own memory, for its side of a trial: what the caller's buffers hold
Buffer = tuple[int, int]  # (address here, bytes)


@dataclass(frozen=True)
class TurnOver:
    """How a turn ended: "ok" when the worker ended it, else why the job stopped."""

    status: str
    message: str
    stdout: str = ""
    stderr: str = ""


@dataclass(frozen=True)
class Timed:
    """One call: the seconds it took by the worker's clock and its answer.  ``answer`` is
    None when the job stopped instead (``Turn.over`` says why) or ran past its time
    (``late``); ``read`` is whether the result's bytes are now in the caller's buffer."""

    seconds: float
    answer: Answer | None
    late: bool = False
    read: bool = False
    problem: str = ""  # why a returned result could not be read


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
        self.transcript = TurnTranscript(spec.limits, spec.inputs)
        self.over = over
        self.job: HeldProcess | None = None

    @classmethod
    def start(
        cls, spec: TurnSpec, control: Control, device: str, zygote_pid: int, timeout_s: float
    ) -> Turn:
        """Start the turn's job, wait until it has loaded its source (or failed to) within
        ``timeout_s``, and stop it."""
        turn = cls(spec)
        order = JobOrder(JobKind.TURN, spec.limits, device, pinned=True)
        turn.channel = JobChannel(control, order, turn.transcript)
        turn.channel.send(frame_chunks(encode_turn(spec)))
        deadline = perf_counter() + timeout_s
        if not turn.channel.spin_until(lambda: turn.transcript.loaded, deadline):
            if turn.channel.life is None and not turn.channel.streams.broken:
                turn._end("the source did not load in time", "timeout")
            else:
                turn._end()
            return turn
        try:
            turn.job = HeldProcess.job_of(zygote_pid)
            turn.job.stop()
        except HeldProcessError as exc:
            turn._end(f"cannot hold the job: {exc}")
        return turn

    @property
    def loaded(self) -> bool:
        return self.over is None

    @property
    def open(self) -> bool:
        """The job may still run: neither ended nor failed to start."""
        return self.channel is not None and not self.channel.closed

    def call(
        self,
        inputs: tuple[Buffer, ...],
        expect: TensorShape,
        out: Buffer,
        limit_s: float,
    ) -> Timed:
        """Time one call on ``inputs`` (copied into the job first), allowing it ``limit_s``;
        when it returns a tensor of ``expect``'s dtype and shape, its bytes land in ``out``."""
        job, channel, transcript = self.job, self.channel, self.transcript
        if self.over is not None or job is None or channel is None:
            return Timed(0.0, None)
        try:
            for (address, size), target in zip(inputs, transcript.buffers, strict=True):
                job.write(target, address, size)
        except HeldProcessError as exc:
            self._end(f"its inputs could not be written: {exc}")
            return Timed(0.0, None)
        nonce = secrets.token_hex(16)
        chunks = frame_chunks(encode_go(nonce))
        answered = before = len(transcript.answers)
        transcript.awaiting = nonce
        channel.send(chunks)  # a few bytes into an empty pipe: the write completes at once
        started = perf_counter()
        try:
            job.resume()
            arrived = channel.spin_until(
                lambda: len(transcript.answers) > before, started + limit_s
            )
            job.stop()
        except HeldProcessError as exc:
            self._end(f"the job could not be held: {exc}")
            return Timed(perf_counter() - started, None)
        seconds = perf_counter() - started
        if not arrived:
            if channel.life is not None or channel.streams.broken:
                self._end()
                return Timed(seconds, None)
            return Timed(seconds, None, late=True)
        answered += 1
        answer = transcript.answers[answered - 1]
        if answer.status != "returned" or answer.tensor != expect:
            return Timed(seconds, answer)
        try:
            job.read(answer.address, out[0], min(out[1], expect.nbytes))
        except HeldProcessError as exc:
            return Timed(seconds, answer, problem=str(exc))
        self._release()
        return Timed(seconds, answer, read=True)

    def _release(self) -> None:
        """Let the job free the result just read, untimed (the next inputs are not written
        yet, so nothing it does now can be work on them), then stop it again."""
        job, channel, transcript = self.job, self.channel, self.transcript
        assert job is not None and channel is not None
        released = transcript.released
        transcript.releasing = True
        channel.send(frame_chunks(RELEASE))
        try:
            job.resume()
            done = channel.spin_until(
                lambda: transcript.released > released, perf_counter() + RELEASE_LIMIT_S
            )
            job.stop()
        except HeldProcessError as exc:
            self._end(f"the job could not be held: {exc}")
            return
        if not done:
            self._end("the job did not free its result in time")

    def end(self) -> TurnOver:
        if self.over is None:
            self._end()
        assert self.over is not None
        return self.over

    def _end(self, why: str = "", why_status: str = "") -> None:
        """End the job; ``why`` (with ``why_status``) is what this side saw go wrong, told
        unless the job's own end says more."""
        channel, transcript = self.channel, self.transcript
        assert channel is not None
        transcript.done = transcript.loaded and channel.life is None and not channel.streams.broken
        obs = channel.finish()  # the zygote kills the job, stopped or not
        if self.job is not None:
            self.job.close()
        spec = self.spec
        request = SandboxRequest(spec.source, spec.filename, (), spec.limits, "cpu")
        status, message = status_of(request, obs, transcript)  # type: ignore[arg-type]
        if why and (why_status or status in ("ok", "internal_error")):
            status, message = why_status or "internal_error", why
        elif status not in ("ok", "load_error") and transcript.loaded:
            message = f"{message} during timed run {len(transcript.answers) + 1}"
        stdout, stderr = (bytes(b).decode("utf-8", "replace") for b in (obs.stdout, obs.stderr))
        self.over = TurnOver(status, message, stdout, stderr)
