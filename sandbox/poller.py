"""One poll loop over a job's descriptors, shared by the two sides that watch a job.

The zygote watches a job's life (its setup, exit and handshake pipes and the client's
``stop``); the client watches its data (results, stdout, stderr, the feed) and the zygote's
report.  Each registers handlers here; a handler reads its own descriptor.
"""

from __future__ import annotations

import os
import select
from collections.abc import Callable

#: 64 KiB: a 1 MiB read buffer costs 20 µs to allocate and shrink, paid on every small
#: frame (a speed trial times two of them per call); big results just take more reads
CHUNK = 1 << 16

Handler = Callable[[], None]


class Poller:
    def __init__(self) -> None:
        self._poll = select.poll()
        self._handlers: dict[int, Handler] = {}

    def on_readable(self, fd: int, handler: Handler) -> None:
        self._poll.register(fd, select.POLLIN)
        self._handlers[fd] = handler

    def on_writable(self, fd: int, handler: Handler) -> None:
        self._poll.register(fd, select.POLLOUT)
        self._handlers[fd] = handler

    def forget(self, fd: int) -> None:
        if self._handlers.pop(fd, None) is not None:
            self._poll.unregister(fd)

    def pump(self, timeout_s: float) -> int:
        """Run the handlers of what is ready within ``timeout_s``; how many were ready."""
        timeout_ms = int(timeout_s * 1000) + (1 if timeout_s > 0 else 0)
        events = self._poll.poll(timeout_ms)
        for fd, _ in events:
            handler = self._handlers.get(fd)
            if handler is not None:  # an earlier handler may have forgotten it
                handler()
        return len(events)


def read_some(fd: int) -> bytes | None:
    """What a ready, non-blocking descriptor holds (b"" at EOF); None when nothing was."""
    try:
        return os.read(fd, CHUNK)
    except BlockingIOError:
        return None
