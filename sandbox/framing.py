"""Length-prefixed frames: a small JSON header plus raw bytes.

Every byte crossing a sandbox boundary travels in this format so that the
reader never evaluates anything: it checks sizes before buffering, parses a
bounded JSON object and keeps the payload as plain bytes.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

MAGIC = b"BRR1"
_PREFIX = struct.Struct(">4sIQ")  # magic, header length, payload length
_READ_CHUNK = 1 << 16  # see poller.CHUNK


class ProtocolError(Exception):
    """The peer sent something that is not a well-formed frame."""


class OversizeError(ProtocolError):
    """A frame declared a payload larger than the reader allows."""


def encode_header(header: dict[str, Any]) -> bytes:
    return json.dumps(header, separators=(",", ":"), allow_nan=False).encode()


def write_frame(fd: int, header: dict[str, Any], payload: bytes | bytearray = b"") -> None:
    """Write one frame with blocking writes (the reader is expected to keep up)."""
    head = encode_header(header)
    _write_all(fd, prefix(len(head), len(payload)) + head)
    if payload:
        _write_all(fd, payload)


def frame_chunks(header: dict[str, Any], payload: bytes = b"") -> list[bytes]:
    """One frame as the chunks to write, the payload not copied."""
    head = encode_header(header)
    return [prefix(len(head), len(payload)) + head, payload]


def prefix(header_bytes: int, payload_bytes: int) -> bytes:
    """The fixed prefix of a frame with these lengths."""
    return _PREFIX.pack(MAGIC, header_bytes, payload_bytes)


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FrameReader:
    """Incremental frame parser with caps checked before anything is buffered.

    ``max_payload`` may be lowered between frames by the owner (an output budget).
    """

    def __init__(self, max_header: int, max_payload: int) -> None:
        self.max_header = max_header
        self.max_payload = max_payload
        self._buffer = bytearray()
        self._lengths: tuple[int, int] | None = None

    def feed(self, data: bytes) -> None:
        self._buffer += data
        self._check_prefix()

    @property
    def idle(self) -> bool:
        """True when no partial frame is buffered."""
        return not self._buffer

    def next_frame(self) -> tuple[dict[str, Any], bytes] | None:
        self._check_prefix()
        if self._lengths is None:
            return None
        header_len, payload_len = self._lengths
        end = _PREFIX.size + header_len + payload_len
        if len(self._buffer) < end:
            return None
        view = memoryview(self._buffer)
        header = parse_header(bytes(view[_PREFIX.size : _PREFIX.size + header_len]))
        payload = bytes(view[_PREFIX.size + header_len : end])  # one copy, not two
        view.release()
        if end == len(self._buffer):
            self._buffer = bytearray()  # no shifting a buffer that is all consumed
        else:
            del self._buffer[:end]
        self._lengths = None
        return header, payload

    def _check_prefix(self) -> None:
        if self._lengths is not None or len(self._buffer) < _PREFIX.size:
            return
        magic, header_len, payload_len = _PREFIX.unpack_from(self._buffer)
        if magic != MAGIC:
            raise ProtocolError("bad frame magic")
        if header_len > self.max_header:
            raise ProtocolError(f"frame header of {header_len} bytes is too large")
        if payload_len > self.max_payload:
            raise OversizeError(f"frame payload of {payload_len} bytes is too large")
        self._lengths = (header_len, payload_len)


def parse_header(raw: bytes) -> dict[str, Any]:
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"frame header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise ProtocolError("frame header is not a JSON object")
    return header


def read_frame(
    fd: int, reader: FrameReader, deadline: float | None = None
) -> tuple[dict[str, Any], bytes] | None:
    """Block until one frame is complete; None on a clean EOF between frames.

    Raises TimeoutError when ``deadline`` (time.monotonic) passes.
    """
    while (frame := reader.next_frame()) is None:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError("no frame before the deadline")
        data = os.read(fd, _READ_CHUNK)
        if not data:
            if reader.idle:
                return None
            raise ProtocolError("stream ended inside a frame")
        reader.feed(data)
    return frame
