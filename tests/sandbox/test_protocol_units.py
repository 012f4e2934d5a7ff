"""Frames and their validation: every malformed reply must be refused, never half-trusted."""

from __future__ import annotations

import contextlib
import copy
import os
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sandbox.api import CallResult, Limits, RawTensor
from sandbox.codec import (
    JobKind,
    JobOrder,
    call_to_json,
    clip,
    decode_request,
    encode_request,
    order_from_json,
    order_to_json,
)
from sandbox.framing import (
    MAGIC,
    FrameReader,
    OversizeError,
    ProtocolError,
    read_frame,
    write_frame,
)
from sandbox.observation import ExitRecord, Life, life_from_json, life_to_json
from sandbox.transcript import Transcript
from sandbox.turns import TensorShape, TurnTranscript
from tests.sandbox.support import FAST, add_call, request


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        with contextlib.suppress(OSError):
            os.close(fd)


def test_frames_round_trip_through_a_pipe(pipe: tuple[int, int]) -> None:
    read, write = pipe
    write_frame(write, {"kind": "a", "n": 1}, b"\x00\x01payload")
    write_frame(write, {"kind": "b"})
    os.close(write)
    reader = FrameReader(1024, 1024)
    assert read_frame(read, reader) == ({"kind": "a", "n": 1}, b"\x00\x01payload")
    assert read_frame(read, reader) == ({"kind": "b"}, b"")
    assert read_frame(read, reader) is None


def _prefix(header_len: int, payload_len: int, magic: bytes = MAGIC) -> bytes:
    return struct.pack(">4sIQ", magic, header_len, payload_len)


def test_oversized_payload_is_refused_from_the_prefix_alone() -> None:
    reader = FrameReader(max_header=1024, max_payload=10)
    with pytest.raises(OversizeError):
        reader.feed(_prefix(2, 11))


@pytest.mark.parametrize(
    "data",
    [
        _prefix(2, 0, magic=b"EVIL") + b"{}",
        _prefix(5_000_000, 0),
        _prefix(2, 0) + b"[]",
        _prefix(4, 0) + b"\xff\xfe{}",
        _prefix(2_000_000, 0) + b"[" * 1_000_000 + b"]" * 1_000_000,
    ],
    ids=["magic", "header-size", "not-object", "not-utf8", "deep-nesting"],
)
def test_malformed_frames_are_protocol_errors(data: bytes) -> None:
    reader = FrameReader(max_header=4_000_000, max_payload=0)
    with pytest.raises(ProtocolError):
        reader.feed(data)
        reader.next_frame()


def test_stream_cut_inside_a_frame(pipe: tuple[int, int]) -> None:
    read, write = pipe
    os.write(write, _prefix(10, 0) + b"{")
    os.close(write)
    with pytest.raises(ProtocolError, match="inside a frame"):
        read_frame(read, FrameReader(1024, 0))


def test_read_gives_up_at_the_deadline(pipe: tuple[int, int]) -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        read_frame(pipe[0], FrameReader(1024, 0), deadline=started + 0.1)
    waited = time.monotonic() - started
    # it waited for the deadline, then gave up (the bound only guards against waiting forever)
    assert 0.1 <= waited < 5.0


def test_requests_round_trip() -> None:
    original = request("def add(a, b):\n    return a + b\n", device="cuda", trace_ops=False)
    header, payload = encode_request(original)
    assert decode_request(header, payload) == original


def _calls_job() -> tuple[Any, list[tuple[dict[str, Any], bytes]]]:
    """A request of two calls and the frames a well-behaved job sends for it."""
    job = request("", (add_call(0, "x")[0], add_call(1, "y")[0]))
    tensor = RawTensor("float32", (2,), b"\x00" * 8)
    results = (
        CallResult("add", "x", "ok", "torch.Tensor", tensor, ops=("torch.add",), duration_s=0.1),
        CallResult("add", "y", "raised", error="ValueError: no"),
    )
    frames = [({"kind": "loaded"}, b"")]
    for result in results:
        header = call_to_json(result) | {"kind": "call", "memory": False}
        frames.append((header, result.tensor.data if result.tensor is not None else b""))
    return job, [*frames, ({"kind": "done"}, b"")]


def _transcribe(job: Any, frames: list[tuple[dict[str, Any], bytes]]) -> Transcript:
    transcript = Transcript(job, job.limits)
    for header, payload in frames:
        transcript.accept(header, payload)
    return transcript


def test_results_are_read_call_by_call() -> None:
    job, frames = _calls_job()
    transcript = _transcribe(job, frames)
    assert transcript.done
    assert transcript.calls[0].tensor == RawTensor("float32", (2,), b"\x00" * 8)
    assert (transcript.calls[0].duration_s, transcript.calls[1].error) == (0.1, "ValueError: no")


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(header: dict[str, Any]) -> None:
        target = header
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


#: (frame index, mutation) for the frames of ``_calls_job``: 0 loaded, 1 and 2 calls, 3 done
CALL_MUTATIONS: dict[str, tuple[int, Callable[[dict[str, Any]], None]]] = {
    "call-status": (2, _set(("status",), "passed")),
    "function": (1, _set(("function",), "mul")),
    "label": (2, _set(("label",), "z")),
    "dtype": (1, _set(("tensor", "dtype"), "object")),
    "bool-dim": (1, _set(("tensor", "shape"), [True, 1])),
    "negative-dim": (1, _set(("tensor", "shape"), [-2])),
    "shape-too-big": (1, _set(("tensor", "shape"), [3])),
    "tensor-on-failure": (2, _set(("tensor",), {"dtype": "uint8", "shape": [0]})),
    "duration": (1, _set(("duration_s",), -1.0)),
    "duration-nan": (1, _set(("duration_s",), float("nan"))),
    # 400 digits: float() of it raises OverflowError, which must not escape to the worker
    "duration-huge-int": (1, _set(("duration_s",), 10**400)),
    "ops": (1, _set(("ops",), [1, 2])),
    "error-type": (2, _set(("error",), ["a"])),
    "error-size": (2, _set(("error",), "x" * 20_000)),
    "memory-type": (1, _set(("memory",), "yes")),
    "early-done": (1, _set(("kind",), "done")),
    "loaded-twice": (3, _set(("kind",), "loaded")),
    "unknown-kind": (0, _set(("kind",), "result")),
}


@pytest.mark.parametrize("name", sorted(CALL_MUTATIONS))
def test_call_frame_validation_rejects(name: str) -> None:
    job, frames = _calls_job()
    index, mutate = CALL_MUTATIONS[name]
    broken = copy.deepcopy(frames[index][0])
    mutate(broken)
    frames[index] = (broken, frames[index][1])
    with pytest.raises(ProtocolError):
        _transcribe(job, frames)


@pytest.mark.parametrize("payload", [b"\x00" * 7, b"\x00" * 9], ids=["short", "trailing"])
def test_call_payload_must_match_its_tensor(payload: bytes) -> None:
    job, frames = _calls_job()
    frames[1] = (frames[1][0], payload)
    with pytest.raises(ProtocolError):
        _transcribe(job, frames)


def test_a_frame_after_done_is_refused() -> None:
    job, frames = _calls_job()
    with pytest.raises(ProtocolError, match="after the end"):
        _transcribe(job, [*frames, ({"kind": "done"}, b"")])


def _ended() -> dict[str, Any]:
    life = Life(exit=ExitRecord(False, 9, 1.75), timed_out=True, wall_s=2.5)
    return life_to_json(life)


def test_the_zygote_report_round_trips() -> None:
    life = life_from_json(_ended())
    assert life == Life(exit=ExitRecord(False, 9, 1.75), timed_out=True, wall_s=2.5)


ENDED_MUTATIONS = {
    "kind": _set(("kind",), "result"),
    "wall-negative": _set(("wall_s",), -0.5),
    "cpu-negative": _set(("exit", "cpu_s"), -1.0),
    "cpu-infinite": _set(("exit", "cpu_s"), float("inf")),
    "cpu-nan": _set(("exit", "cpu_s"), float("nan")),
    "cpu-type": _set(("exit", "cpu_s"), "1.5"),
    "cpu-bool": _set(("exit", "cpu_s"), True),
    "cpu-missing": lambda h: h["exit"].pop("cpu_s"),
    "exit-type": _set(("exit",), [1]),
    "signal-type": _set(("exit", "value"), 9.0),
    "timed-out-type": _set(("timed_out",), 1),
    "setup-size": _set(("setup_error",), "x" * 20_000),
}


@pytest.mark.parametrize("name", sorted(ENDED_MUTATIONS))
def test_zygote_report_validation_rejects(name: str) -> None:
    broken = copy.deepcopy(_ended())
    ENDED_MUTATIONS[name](broken)
    with pytest.raises(ProtocolError):
        life_from_json(broken)


def test_job_orders_round_trip_and_are_checked() -> None:
    order = JobOrder(JobKind.TURN, FAST, "cuda", pinned=True)
    assert order_from_json(order_to_json(order)) == order
    for mutate in (
        _set(("job",), "shell"),
        _set(("device",), "tpu"),
        _set(("pinned",), 1),
        _set(("limits", "wall_s"), -1),
        lambda h: h["limits"].pop("threads"),
    ):
        broken = copy.deepcopy(order_to_json(order))
        mutate(broken)
        with pytest.raises(ProtocolError):
            order_from_json(broken)


def test_clip_keeps_head_and_tail() -> None:
    text = "HEAD" + "-" * 10_000 + "TAIL"
    clipped = clip(text, 200)
    assert len(clipped) == 200
    assert clipped.startswith("HEAD") and clipped.endswith("TAIL")
    assert clip("short", 200) == "short"


# -- speed-trial turns: the worker's reading of a held job --------------------------------


def _turn_transcript() -> TurnTranscript:
    transcript = TurnTranscript(Limits(), (TensorShape("float32", (4,)),))
    transcript.accept({"kind": "loaded", "buffers": [4096]}, b"")
    return transcript


def _returned(nonce: str) -> dict[str, object]:
    tensor = {"dtype": "float32", "shape": [4]}
    return {"kind": "returned", "nonce": nonce, "address": 8192, "tensor": tensor, "memory": False}


def test_a_turn_answer_is_taken_only_for_the_call_just_made() -> None:
    transcript = _turn_transcript()
    with pytest.raises(ProtocolError, match="unexpected 'returned' frame"):
        transcript.accept(_returned("a" * 32), b"")  # no call made yet
    transcript.awaiting = "b" * 32
    with pytest.raises(ProtocolError, match="not to the call that was made"):
        transcript.accept(_returned("a" * 32), b"")
    transcript.accept(_returned("b" * 32), b"")
    (answer,) = transcript.answers
    assert (answer.address, answer.tensor) == (8192, TensorShape("float32", (4,)))
    assert transcript.awaiting == ""
    with pytest.raises(ProtocolError, match="unexpected 'returned' frame"):
        transcript.accept(_returned("b" * 32), b"")  # the same answer twice


def test_a_turn_job_must_give_one_buffer_per_input_and_no_payloads() -> None:
    transcript = TurnTranscript(Limits(), (TensorShape("float32", (4,)),))
    with pytest.raises(ProtocolError, match="one buffer per input"):
        transcript.accept({"kind": "loaded", "buffers": [4096, 8192]}, b"")
    with pytest.raises(OversizeError):
        _turn_transcript().accept({"kind": "released"}, b"x")
