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

from bot.sandbox.api import CallResult, RawTensor, SandboxResult
from bot.sandbox.codec import (
    clip,
    decode_request,
    decode_result,
    encode_request,
    encode_result,
)
from bot.sandbox.framing import (
    MAGIC,
    FrameReader,
    OversizeError,
    ProtocolError,
    read_frame,
    write_frame,
)
from tests.sandbox.support import add_call, request


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


def _valid_result() -> tuple[Any, dict[str, Any], bytes]:
    job = request("", (add_call(0, "x")[0], add_call(1, "y")[0]))
    tensor = RawTensor("float32", (2,), b"\x00" * 8)
    result = SandboxResult(
        "ok",
        "ok",
        (
            CallResult(
                "add", "x", "ok", "torch.Tensor", tensor, ops=("torch.add",), duration_s=0.1
            ),
            CallResult("add", "y", "raised", error="ValueError: no"),
        ),
        stdout="hi",
        wall_s=2.5,
        cpu_s=1.75,
    )
    header, payload = encode_result(result)
    return job, header, payload


def test_results_round_trip() -> None:
    job, header, payload = _valid_result()
    decoded = decode_result(header, payload, job)
    assert decoded.calls[0].tensor == RawTensor("float32", (2,), b"\x00" * 8)
    assert (decoded.stdout, decoded.calls[1].error) == ("hi", "ValueError: no")
    assert (decoded.wall_s, decoded.cpu_s) == (2.5, 1.75)


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(header: dict[str, Any]) -> None:
        target = header
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


MUTATIONS = {
    "status": _set(("status",), "hacked"),
    "call-status": _set(("calls", 1, "status"), "passed"),
    "function": _set(("calls", 0, "function"), "mul"),
    "label": _set(("calls", 1, "label"), "z"),
    "missing-call": lambda h: h["calls"].pop(),
    "dtype": _set(("calls", 0, "tensor", "dtype"), "object"),
    "bool-dim": _set(("calls", 0, "tensor", "shape"), [True, 1]),
    "negative-dim": _set(("calls", 0, "tensor", "shape"), [-2]),
    "shape-too-big": _set(("calls", 0, "tensor", "shape"), [3]),
    "tensor-on-failure": _set(("calls", 1, "tensor"), {"dtype": "uint8", "shape": [0]}),
    "duration": _set(("calls", 0, "duration_s"), -1.0),
    "wall-negative": _set(("wall_s",), -0.5),
    "cpu-negative": _set(("cpu_s",), -1.0),
    "cpu-infinite": _set(("cpu_s",), float("inf")),
    "cpu-nan": _set(("cpu_s",), float("nan")),
    "cpu-type": _set(("cpu_s",), "1.5"),
    "cpu-bool": _set(("cpu_s",), True),
    "cpu-missing": lambda h: h.pop("cpu_s"),
    "ops": _set(("calls", 0, "ops"), [1, 2]),
    "stdout-type": _set(("stdout",), ["a"]),
    "stdout-size": _set(("stdout",), "x" * 20_000),
    "device": _set(("device",), "tpu"),
    "kind": _set(("kind",), "job"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_result_validation_rejects(name: str) -> None:
    job, header, payload = _valid_result()
    broken = copy.deepcopy(header)
    MUTATIONS[name](broken)
    with pytest.raises(ProtocolError):
        decode_result(broken, payload, job)


@pytest.mark.parametrize("payload", [b"\x00" * 7, b"\x00" * 9], ids=["short", "trailing"])
def test_result_payload_must_match_the_tensors(payload: bytes) -> None:
    job, header, _ = _valid_result()
    with pytest.raises(ProtocolError):
        decode_result(header, payload, job)


def test_clip_keeps_head_and_tail() -> None:
    text = "HEAD" + "-" * 10_000 + "TAIL"
    clipped = clip(text, 200)
    assert len(clipped) == 200
    assert clipped.startswith("HEAD") and clipped.endswith("TAIL")
    assert clip("short", 200) == "short"
