"""Speed-trial turns, the zygote's side: one fresh job per turn, fed inputs on demand.

A speed trial (``bot.grading.speed_trial``) alternates turns of a trusted reference and of the
learner's function.  Each turn is a new confined job pinned to the job core: it loads its
source, says "loaded", and only then does the worker send it inputs, one frame at a time,
through the zygote; the job answers each with the function's result.  The worker's clock runs
from sending an input to holding the result bytes, so nothing the job does to its own clocks
counts, and because the inputs do not exist anywhere before the job has loaded (not in the
zygote's memory that the job inherits either), no import-time work can get ahead of them.
When the worker ends the turn the job is killed with everything it started, so no thread or
process of the learner's is alive during a reference turn, and no cache outlives a turn.

Frames, worker -> zygote: ``turn`` (source, function, limits), then ``inputs`` (tensors in
the payload) any number of times, then ``end``.  Zygote -> worker: ``loaded`` or a final
``turn_over``; one ``output`` per ``inputs``; ``turn_over`` after ``end`` or when the job died.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from bot.sandbox import framing
from bot.sandbox.api import Limits, RawTensor, SandboxRequest
from bot.sandbox.codec import (
    MAX_ERROR_CHARS,
    MAX_NAME_CHARS,
    MAX_SOURCE_CHARS,
    field_of,
    limits_of,
    take_tensor,
    tensor_meta,
    text_of,
)
from bot.sandbox.framing import FrameReader, OversizeError, ProtocolError
from bot.sandbox.jail import Body, Jail, launch
from bot.sandbox.supervise import Supervisor
from bot.sandbox.verdict import status_of

MAX_ARGS = 16
FEED_HEADER_MAX = 1 << 20
FEED_PAYLOAD_MAX = 1 << 36  # the zygote is trusted: the worker's inputs, whatever their size
#: how long the zygote waits for the worker's next frame inside a turn
WORKER_WAIT_S = 120.0


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


def encode_turn(spec: TurnSpec) -> dict[str, Any]:
    return {
        "kind": "turn",
        "source": spec.source,
        "filename": spec.filename,
        "function": spec.function,
        "limits": asdict(spec.limits),
        "device": spec.device,
    }


def decode_turn(header: dict[str, Any]) -> TurnSpec:
    device = field_of(header, "device", str)
    if device not in ("cpu", "cuda"):
        raise ProtocolError("bad device")
    return TurnSpec(
        source=text_of(header, "source", MAX_SOURCE_CHARS),
        filename=text_of(header, "filename", MAX_NAME_CHARS),
        function=text_of(header, "function", MAX_NAME_CHARS),
        limits=limits_of(header.get("limits")),
        device=device,
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
    """Validate one output frame, from the job (in the zygote) or the zygote (in the worker)."""
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
    """The zygote's reading of a turn job's result stream: "loaded" (or "load_error"), then
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
        self.done = False  # the worker ended the turn
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


def _turn_over(status: str, message: str, stdout: bytes, stderr: bytes) -> dict[str, Any]:
    return {
        "kind": "turn_over",
        "status": status,
        "message": message[:MAX_ERROR_CHARS],
        "stdout": stdout.decode("utf-8", "replace"),
        "stderr": stderr.decode("utf-8", "replace"),
    }


def serve_turn(
    jail: Jail,
    spec: TurnSpec,
    core: int,
    body: Body,
    requests: int,
    reader: FrameReader,
    replies: int,
) -> int | None:
    """Run one turn: launch ``body`` (``runner.FeedRunner``) pinned to ``core``, relay the
    worker's inputs and the job's outputs, end it.  Returns the keeper left to reap before
    the next job, as ``run_job`` does."""
    transcript = TurnTranscript(spec.limits)
    if jail.cgroup is not None:
        jail.cgroup.arm(spec.limits)
    supervisor = Supervisor(
        launch(jail, spec.limits, spec.device, body, core),
        transcript,  # type: ignore[arg-type]  # duck-typed like Transcript
        spec.limits,
        jail.cgroup,
        group_kill=not jail.mode.flags,
    )
    failure = ""
    try:
        if supervisor.pump_until(lambda: transcript.loaded):
            framing.write_frame(replies, {"kind": "loaded"})
            _relay(supervisor, transcript, requests, reader, replies)
        transcript.done = transcript.loaded and not supervisor.ended
    except (ProtocolError, TimeoutError) as exc:  # the worker's side broke the protocol
        failure = f"the turn was abandoned: {exc}"
    finally:
        obs = supervisor.finish()
        if jail.cgroup is not None:
            obs.oom, obs.pids_exhausted = jail.cgroup.disarm()
    if failure:
        framing.write_frame(replies, _turn_over("internal_error", failure, b"", b""))
        return obs.unreaped
    request = SandboxRequest(spec.source, spec.filename, (), spec.limits, "cpu")
    status, message = status_of(request, obs, transcript)  # type: ignore[arg-type]
    if status not in ("ok", "load_error") and transcript.loaded:
        message = f"{message} during timed run {len(transcript.calls) + 1}"
    framing.write_frame(replies, _turn_over(status, message, obs.stdout, obs.stderr))
    return obs.unreaped


def _relay(
    supervisor: Supervisor,
    transcript: TurnTranscript,
    requests: int,
    reader: FrameReader,
    replies: int,
) -> None:
    """Pass the worker's inputs to the job and each output back, until ``end``."""
    while True:
        frame = framing.read_frame(requests, reader, time.monotonic() + WORKER_WAIT_S)
        if frame is None:
            raise BrokenPipeError("the worker went away during a turn")
        header, payload = frame
        if header.get("kind") == "end":
            return
        if header.get("kind") != "inputs":
            raise ProtocolError("expected inputs or end")
        args = decode_inputs(header, payload)  # checked, then passed on as the bytes came
        supervisor.send(_frame_bytes(*encode_inputs(args)))
        transcript.sent += 1
        if not supervisor.pump_until(lambda: len(transcript.calls) == transcript.sent):
            return
        framing.write_frame(replies, *encode_output(transcript.calls[-1]))


def _frame_bytes(header: dict[str, Any], payload: bytes) -> list[bytes]:
    head = framing.encode_header(header)
    return [framing.prefix(len(head), len(payload)) + head, payload]


def feed_reader() -> FrameReader:
    return FrameReader(FEED_HEADER_MAX, FEED_PAYLOAD_MAX)


def feed_frames(fd: int, reader: FrameReader) -> Iterator[tuple[RawTensor, ...]]:
    """The job's side: each inputs frame from the feed, until the zygote closes it."""
    while (frame := framing.read_frame(fd, reader)) is not None:
        yield decode_inputs(*frame)
