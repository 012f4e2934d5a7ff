"""The channel between the trusted client and its zygote: small frames over a Unix socket.

The frame that starts a job carries the job's pipe ends (``sandbox.pipes``) as
``SCM_RIGHTS``; everything else is a JSON header with no payload.  Only orders and reports
cross here (limits, "stop", how a job ended), never a request body or a result.
"""

from __future__ import annotations

import array
import contextlib
import select
import socket
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from sandbox.framing import FrameReader, ProtocolError, encode_header, prefix

MAX_FDS = 8
_CHUNK = 1 << 16


class Control:
    """One end of the control socket; blocking, read when ``poll`` says it is ready."""

    def __init__(self, sock: socket.socket, max_header: int) -> None:
        self.sock = sock
        self.reader = FrameReader(max_header, 0)
        self.fds: deque[int] = deque()  # received, not yet taken by a frame
        self.closed = False  # the peer closed its end

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, header: dict[str, Any], fds: Sequence[int] = ()) -> None:
        head = encode_header(header)
        data = prefix(len(head), 0) + head
        if fds:
            rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
            data = data[self.sock.sendmsg([data], rights) :]
        if data:
            self.sock.sendall(data)

    def receive(self) -> None:
        """Read what the peer sent (blocks until something comes), keeping any descriptors."""
        data, fds, flags, _ = socket.recv_fds(self.sock, _CHUNK, MAX_FDS, socket.MSG_CMSG_CLOEXEC)
        self.fds.extend(fds)
        if flags & socket.MSG_CTRUNC:
            raise ProtocolError("more descriptors than a frame may carry")
        if not data:
            self.closed = True
            return
        self.reader.feed(data)

    def next_frame(self) -> dict[str, Any] | None:
        """A complete frame already received, if there is one."""
        frame = self.reader.next_frame()
        return None if frame is None else frame[0]

    def read(self, deadline: float | None = None) -> dict[str, Any] | None:
        """Block until the next frame; None when the peer closed between frames.  Raises
        TimeoutError when ``deadline`` (time.monotonic) passes."""
        while (header := self.next_frame()) is None:
            if self.closed:
                if self.reader.idle:
                    return None
                raise ProtocolError("stream ended inside a frame")
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([self.sock], [], [], remaining)[0]:
                    raise TimeoutError("no frame before the deadline")
            self.receive()
        return header

    def take_fds(self, count: int) -> list[int]:
        """The descriptors the last frame brought; ProtocolError when it brought others."""
        if len(self.fds) != count:
            self.close_fds()
            raise ProtocolError(f"expected {count} descriptors with the frame")
        return [self.fds.popleft() for _ in range(count)]

    def close_fds(self) -> None:
        while self.fds:
            with contextlib.suppress(OSError):
                socket.close(self.fds.popleft())

    def close(self) -> None:
        self.close_fds()
        self.sock.close()
