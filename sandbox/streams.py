"""A job's data, read by whoever owns its pipes: results checked frame by frame, capped prints.

The job writes straight to these pipes, so everything read here comes from the submission:
each result frame is checked by the transcript as it arrives, tensors count against the
output budget before they are buffered, stdout and stderr are kept up to their cap, and the
first broken rule ends the job.  The feed is written only as fast as the job reads it, so a
job that never reads cannot block its reader.
"""

from __future__ import annotations

import os
import time
from typing import Any, Protocol

from sandbox.api import Limits
from sandbox.framing import FrameReader, OversizeError, ProtocolError
from sandbox.observation import Streams
from sandbox.pipes import JobPipes
from sandbox.poller import Poller, read_some

JOB_HEADER_MAX = 1 << 20
DRAIN_S = 1.0  # how long an ended job's pipes may take to close
_WRITEV_MAX = 16


class Reading(Protocol):
    """A transcript of the result stream (``Transcript`` or ``TurnTranscript``)."""

    remaining_output: int

    @property
    def finished(self) -> bool: ...

    def accept(self, header: dict[str, Any], payload: bytes) -> None: ...


class JobStreams:
    """The parent ends of one job's pipes, served by a ``Poller``."""

    def __init__(self, pipes: JobPipes, transcript: Reading, limits: Limits) -> None:
        self.transcript = transcript
        self.limits = limits
        self.facts = Streams()
        self.reader = FrameReader(JOB_HEADER_MAX, transcript.remaining_output)
        self.feed = pipes.feed.write
        self.outbox: list[memoryview] = []
        self.close_feed_when_sent = False
        self.poller: Poller | None = None
        self.handlers = {
            pipes.result.read: self._on_result,
            pipes.stdout.read: self._on_stdout,
            pipes.stderr.read: self._on_stderr,
        }
        self.open = set(self.handlers)
        for fd in [*self.open, self.feed]:
            os.set_blocking(fd, False)

    @property
    def broken(self) -> bool:
        """The job broke a cap or the protocol: nothing more it sends counts."""
        return bool(self.facts.over or self.facts.protocol_error)

    @property
    def settled(self) -> bool:
        return self.transcript.finished or self.broken

    def register(self, poller: Poller) -> None:
        self.poller = poller
        for fd in self.open:
            poller.on_readable(fd, lambda fd=fd: self._read(fd))

    def send(self, chunks: list[bytes]) -> None:
        """Queue bytes for the job's feed; written at once as far as the pipe takes them,
        the rest as the job reads."""
        if self.feed < 0:
            return
        waiting = bool(self.outbox)
        self.outbox += [memoryview(c) for c in chunks if c]
        if not waiting:
            self._write_feed()
            if self.outbox and self.poller is not None and self.feed >= 0:
                self.poller.on_writable(self.feed, self._write_feed)

    def end_feed(self) -> None:
        """Close the feed once what is queued is written: the job then reads EOF."""
        self.close_feed_when_sent = True
        if not self.outbox:
            self._close_feed()

    def drain(self, wait_s: float) -> None:
        """Read what the ended job left; with ``wait_s``, until its pipes close."""
        assert self.poller is not None
        grace = time.monotonic() + wait_s
        while self.open and not self.broken:
            ready = self.poller.pump(max(grace - time.monotonic(), 0.0))
            if not ready and time.monotonic() >= grace:
                break

    def close(self) -> None:
        for fd in list(self.open):
            self._forget(fd)
        self._close_feed()

    def _read(self, fd: int) -> None:
        data = read_some(fd)
        if data is None:
            return
        if data:
            self.handlers[fd](data)
        else:
            self._forget(fd)

    def _forget(self, fd: int) -> None:
        if self.poller is not None:
            self.poller.forget(fd)
        self.open.discard(fd)
        os.close(fd)

    def _write_feed(self) -> None:
        try:
            written = os.writev(self.feed, self.outbox[:_WRITEV_MAX])
        except BlockingIOError:
            return
        except OSError:  # the job closed its end (it exited): nothing more to deliver
            written = sum(len(c) for c in self.outbox)
        while written and self.outbox:
            first = self.outbox[0]
            if written >= len(first):
                written -= len(first)
                self.outbox.pop(0)
            else:
                self.outbox[0], written = first[written:], 0
        if not self.outbox:
            if self.poller is not None:
                self.poller.forget(self.feed)
            if self.close_feed_when_sent:
                self._close_feed()

    def _close_feed(self) -> None:
        if self.feed >= 0:
            if self.poller is not None:
                self.poller.forget(self.feed)
            os.close(self.feed)
            self.feed = -1
            self.outbox.clear()

    def _on_result(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            self.reader.max_payload = self.transcript.remaining_output
            self.reader.feed(data)
            while (frame := self.reader.next_frame()) is not None:
                self.transcript.accept(*frame)
                self.reader.max_payload = self.transcript.remaining_output
        except OversizeError:
            self.facts.over = "tensors"
        except ProtocolError as exc:
            self.facts.protocol_error = str(exc)

    def _capture(self, name: str, buffer: bytearray, data: bytes) -> None:
        room = self.limits.stdout_bytes - len(buffer)
        buffer += data[: max(room, 0)]
        if len(data) > room and not self.facts.over:
            self.facts.over = name

    def _on_stdout(self, data: bytes) -> None:
        self._capture("stdout", self.facts.stdout, data)

    def _on_stderr(self, data: bytes) -> None:
        self._capture("stderr", self.facts.stderr, data)
