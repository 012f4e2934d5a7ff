"""Frames and their validation: every malformed reply must be refused, never half-trusted."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sandbox.api import CallResult, Limits, OpTime, RawTensor
from sandbox.codec import (
    CLEAN_NAME_CHARS,
    MAX_PROFILE_OPS,
    JobKind,
    JobOrder,
    call_to_json,
    clean_name,
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
    profiled = dataclasses.replace(add_call(1, "p")[0], profile=True)
    calls = (add_call()[0], profiled)
    original = request("def add(a, b):\n    return a + b\n", calls, device="cuda", trace_ops=False)
    header, payload = encode_request(original)
    assert decode_request(header, payload) == original
    assert [call.profile for call in decode_request(header, payload).calls] == [False, True]


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


# -- profiles: the job measuring itself, validated and cleaned ---------------------------


def _profiled_job(
    profile: tuple[OpTime, ...] | None, *, asked: bool = True, status: str = "ok", problem: str = ""
) -> tuple[Any, list[tuple[dict[str, Any], bytes]]]:
    """A request of one call (profiled when ``asked``) and the frames of a job that answers it
    with ``profile``."""
    call = dataclasses.replace(add_call(0, "p")[0], profile=asked)
    job = request("", (call,))  # FAST: a wall limit of 3 s
    result = CallResult("add", "p", status, profile=profile, profile_problem=problem)  # type: ignore[arg-type]
    header = call_to_json(result) | {"kind": "call", "memory": False}
    return job, [({"kind": "loaded"}, b""), (header, b""), ({"kind": "done"}, b"")]


HONEST = (
    OpTime("aten::tanh", 0.002, 1, 1, False),
    OpTime("aten::mul", 0.001, 3, 2, False),
    OpTime("void at::native::elementwise_kernel<128, 4>(int)", 0.0005, 2, 0, True),
)


def test_a_profile_is_read_with_its_call() -> None:
    job, frames = _profiled_job(HONEST)
    (call,) = _transcribe(job, frames).calls
    assert call.profile == HONEST
    assert call.profile_problem == ""


def test_a_profiled_call_may_come_back_without_a_profile_saying_why() -> None:
    job, frames = _profiled_job(None, problem="the profiler did not start: RuntimeError: no")
    (call,) = _transcribe(job, frames).calls
    assert (call.profile, call.profile_problem) == (
        None,
        "the profiler did not start: RuntimeError: no",
    )


def test_profile_names_are_cleaned_merged_and_sorted_by_the_reader() -> None:
    sent = (
        OpTime("@everyone `evil`\n", 0.001, 1, 1, False),
        OpTime("#everyone *evil*\t", 0.002, 2, 1, False),  # the same name once cleaned
        OpTime("a" * 100, 0.0025, 1, 0, False),
        OpTime("@everyone `evil`\n", 0.0001, 1, 0, True),  # a kernel: kept apart
    )
    job, frames = _profiled_job(sent)
    (call,) = _transcribe(job, frames).calls
    assert call.profile == (
        OpTime("?everyone ?evil?", 0.003, 3, 2, False),
        OpTime("a" * (CLEAN_NAME_CHARS - 1) + "…", 0.0025, 1, 0, False),
        OpTime("?everyone ?evil?", 0.0001, 1, 0, True),
    )


def _entry(**change: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(header: dict[str, Any]) -> None:
        header["profile"][0].update(change)

    return mutate


#: mutations of the honest call frame of ``_profiled_job(HONEST)``
PROFILE_MUTATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "too-many": lambda h: h.update(
        profile=[{**h["profile"][0], "name": f"op{i}"} for i in range(MAX_PROFILE_OPS + 1)]
    ),
    "ten-thousand": lambda h: h.update(
        profile=[{**h["profile"][0], "name": f"op{i}"} for i in range(10_000)]
    ),
    "duplicate": lambda h: h["profile"].append(dict(h["profile"][0])),
    "not-a-list": _set(("profile",), {"aten::mul": 1}),
    "entry-not-an-object": _set(("profile",), [["aten::mul", 0.1, 1, 1, False]]),
    "extra-key": _entry(flops=1),
    "missing-key": lambda h: h["profile"][0].pop("kernel"),
    "self-nan": _entry(self_s=float("nan")),
    "self-infinite": _entry(self_s=float("inf")),
    "self-negative": _entry(self_s=-1e-6),
    "self-over-the-wall-limit": _entry(self_s=3.5),
    "self-huge-int": _entry(self_s=10**400),
    "self-string": _entry(self_s="0.1"),
    "self-bool": _entry(self_s=True),
    "count-zero": _entry(count=0),
    "count-huge": _entry(count=10**10),
    "count-float": _entry(count=1.0),
    "count-bool": _entry(count=True),
    "top-over-count": _entry(top_level=2),
    "top-negative": _entry(top_level=-1),
    "kernel-at-top-level": lambda h: h["profile"][2].update(top_level=1),
    "kernel-int": _entry(kernel=1),
    "name-type": _entry(name=["aten::mul"]),
    "name-too-long": _entry(name="x" * 300),
    "problem-with-a-profile": _set(("profile_problem",), "it failed"),
    "problem-too-long": lambda h: h.update(profile=None, profile_problem="x" * 5000),
    "problem-type": lambda h: h.update(profile=None, profile_problem=None),
    "profile-missing": lambda h: h.pop("profile"),
}


@pytest.mark.parametrize("name", sorted(PROFILE_MUTATIONS))
def test_profile_validation_rejects(name: str) -> None:
    job, frames = _profiled_job(HONEST)
    PROFILE_MUTATIONS[name](frames[1][0])
    with pytest.raises(ProtocolError):
        _transcribe(job, frames)


@pytest.mark.parametrize(
    ("profile", "problem"),
    [(HONEST, ""), ((), ""), (None, "made up")],
    ids=["ops", "empty", "problem"],
)
def test_a_call_that_did_not_ask_for_a_profile_gets_none(
    profile: tuple[OpTime, ...] | None, problem: str
) -> None:
    job, frames = _profiled_job(profile, asked=False, problem=problem)
    with pytest.raises(ProtocolError, match="did not ask for one"):
        _transcribe(job, frames)


@pytest.mark.parametrize("status", ["not_defined", "not_callable", "skipped"])
def test_a_call_that_never_ran_has_no_profile(status: str) -> None:
    job, frames = _profiled_job(HONEST, status=status)
    with pytest.raises(ProtocolError, match="did not run under the profiler"):
        _transcribe(job, frames)
    job, frames = _profiled_job(None, status=status)
    assert _transcribe(job, frames).calls[0].profile is None


CLEANED = {
    "aten::addmm": "aten::addmm",
    "void at::native::(anonymous namespace)::k<float>(int, float*)": (
        "void at::native::(anonymous namespace)::k<float>(int, float?)"
    ),
    "@everyone `evil`\n": "?everyone ?evil?",
    "<@&123456> @here": "<??123456> ?here",
    "a\n\n\tb\r\nc  d\u2028e": "a b c d e",
    "  padded  ": "padded",
    "\x00\x1b[31mred\x7f": "??[31mred?",
    "**bold** ~~x~~ ||spoiler|| # h": "??bold?? ??x?? ??spoiler?? ? h",
    "caf\u00e9 \u202eevil \u200bzero": "caf? ?evil ?zero",
    "": "?",
    " \n\t ": "?",
    "x" * CLEAN_NAME_CHARS: "x" * CLEAN_NAME_CHARS,
    "y" * (CLEAN_NAME_CHARS + 1): "y" * (CLEAN_NAME_CHARS - 1) + "…",
    "@" * 10_000: "?" * (CLEAN_NAME_CHARS - 1) + "…",
}


@pytest.mark.parametrize("raw", sorted(CLEANED))
def test_clean_name(raw: str) -> None:
    cleaned = clean_name(raw)
    assert cleaned == CLEANED[raw]
    assert 1 <= len(cleaned) <= CLEAN_NAME_CHARS
    assert not {"@", "`", "\n", "\r", "#", "*", "|", "~"} & set(cleaned)
    assert cleaned.isprintable()
    assert clean_name(cleaned) == cleaned  # cleaning twice changes nothing


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
