"""Watch a running job from the zygote: wall clock, byte caps, then kill all of it.

One poll loop reads every pipe of the job.  It stops when the last result
frame arrives, when the init reports that the job process ended, when the wall
deadline passes, or when the job breaks a cap or the protocol.  Then the whole
job is killed (the init through a pidfd, which takes its PID namespace down;
the process group and a sweep of the cgroup in the degraded mode), the keeper
is reaped (or, when the cgroup sweep signalled every process, left to reap
before the next job), and whatever the job left in the pipes is drained.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.sandbox.api import Limits
from bot.sandbox.cgroups import ZygoteCgroup
from bot.sandbox.framing import FrameReader, OversizeError, ProtocolError
from bot.sandbox.jail import EXIT_RECORD, HANDSHAKE, SETUP_OK, Launched, decode_exit
from bot.sandbox.transcript import Transcript

JOB_HEADER_MAX = 1 << 20
DRAIN_S = 1.0
REAP_S = 5.0
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ExitRecord:
    exited: bool  # True: exited with ``value`` as code; False: killed by signal ``value``
    value: int
    cpu_s: float


@dataclass
class Observation:
    setup_error: str = ""
    exit: ExitRecord | None = None
    timed_out: bool = False
    over: str = ""  # "stdout", "stderr" or "tensors" when that cap was exceeded
    protocol_error: str = ""
    oom: bool = False
    pids_exhausted: bool = False
    wall_s: float = 0.0
    unreaped: int | None = None  # a keeper left to reap before the next job (already killed)
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)


def reap(pid: int, timeout_s: float) -> None:
    """waitpid with a bound; a child stuck in the kernel is left for ``reap_strays``."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        os.waitpid(pid, 0)
        return
    try:
        if select.select([pidfd], [], [], timeout_s)[0]:
            os.waitpid(pid, 0)
        else:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(pidfd)


def reap_strays() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


class Supervisor:
    def __init__(
        self,
        launched: Launched,
        transcript: Transcript,
        limits: Limits,
        cgroup: ZygoteCgroup | None,
        group_kill: bool,
    ) -> None:
        self.launched = launched
        self.transcript = transcript
        self.limits = limits
        self.cgroup = cgroup
        self.group_kill = group_kill
        self.obs = Observation()
        self.reader = FrameReader(JOB_HEADER_MAX, transcript.remaining_output)
        wiring = launched.wiring
        self.ack = wiring.ack.write
        self.feed = wiring.feed.write
        self.outbox: list[memoryview] = []  # for the job's feed, written as it reads them
        self.status_fd = wiring.status.read
        self.handlers = {
            wiring.result.read: self._on_result,
            wiring.stdout.read: self._on_stdout,
            wiring.stderr.read: self._on_stderr,
            wiring.setup.read: self._on_setup,
            wiring.status.read: self._on_status,
            wiring.handshake.read: self._on_handshake,
        }
        self.poller = select.poll()
        for fd in self.handlers:
            self.poller.register(fd, select.POLLIN)
        self.open = set(self.handlers)
        self.ended = False
        self.init_pid: int | None = None
        self.pidfd: int | None = None
        self.pending = {wiring.handshake.read: b"", wiring.status.read: b""}

    def watch(self) -> Observation:
        """Supervise the job until it ends, then kill and reap it."""
        self.pump_until(lambda: False)
        return self.finish()

    def pump_until(self, done: Callable[[], bool]) -> bool:
        """Serve the job's pipes until ``done()`` holds (True) or the job ended, broke a cap
        or ran past its wall limit (False).  The wall limit counts from the launch."""
        deadline = self.launched.started + self.limits.wall_s
        while not self.ended and not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.obs.timed_out = True
                return False
            self._pump(remaining)
        return done()

    def send(self, chunks: list[bytes]) -> None:
        """Queue bytes for the job's feed; ``pump_until`` writes them as the job reads."""
        if not self.outbox:
            self.poller.register(self.feed, select.POLLOUT)
        self.outbox += [memoryview(c) for c in chunks if c]

    def finish(self) -> Observation:
        """Kill the whole job, reap what can be reaped, drain its pipes, close them."""
        started = self.launched.started
        try:
            self.obs.wall_s = time.monotonic() - started
            if self._kill() and self.transcript.finished:
                # Every process of the job has SIGKILL pending and the results are in: its
                # teardown may overlap the reply; the zygote reaps the keeper (which reaps
                # the init, so the whole namespace is gone) before the next job.
                self.obs.unreaped = self.launched.keeper
                self._drain(0.0)
            else:
                reap(self.launched.keeper, REAP_S)
                self._drain(DRAIN_S)
        finally:
            extra = [self.pidfd] if self.pidfd is not None else []
            for fd in [*self.open, self.ack, self.feed, *extra]:
                os.close(fd)
        return self.obs

    def _drain(self, wait_s: float) -> None:
        """Read what the dead job left; with ``wait_s``, until its pipes close."""
        grace = time.monotonic() + wait_s
        while self.open and not (self.obs.over or self.obs.protocol_error):
            if not self._pump(max(grace - time.monotonic(), 0.0)) and time.monotonic() >= grace:
                break

    def _pump(self, timeout_s: float) -> int:
        """Handle what is ready within ``timeout_s``; the number of descriptors handled."""
        events = self.poller.poll(int(timeout_s * 1000) + (1 if timeout_s > 0 else 0))
        for fd, _ in events:
            if fd == self.feed:
                self._write_feed()
                continue
            if fd not in self.open:
                continue
            try:
                data = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue
            if data:
                self.handlers[fd](data)
            else:
                self._eof(fd)
        return len(events)

    def _write_feed(self) -> None:
        try:
            written = os.writev(self.feed, self.outbox[:16])
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
            self.poller.unregister(self.feed)

    def _eof(self, fd: int) -> None:
        self.poller.unregister(fd)
        self.open.discard(fd)
        os.close(fd)
        if fd == self.status_fd:
            self.ended = True  # the init is gone, with or without a report

    def _kill(self) -> bool:
        """SIGKILL the whole job; True when every process was signalled directly."""
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        elif self.init_pid is not None:  # kernels without pidfd_open (before 5.3)
            with contextlib.suppress(OSError):
                os.kill(self.init_pid, signal.SIGKILL)
        if self.group_kill and self.init_pid is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.init_pid, signal.SIGKILL)
        if self.init_pid is None:  # still in setup: the keeper's death takes its init down
            with contextlib.suppress(OSError):
                os.kill(self.launched.keeper, signal.SIGKILL)
        if self.cgroup is None:
            return False
        self.cgroup.kill_others(spare=self.launched.keeper)  # it reaps the init: trusted, idle
        return True

    def _on_handshake(self, data: bytes) -> None:
        fd = self.launched.wiring.handshake.read
        self.pending[fd] += data
        if len(self.pending[fd]) < HANDSHAKE.size:
            return
        (self.init_pid,) = HANDSHAKE.unpack(self.pending[fd][: HANDSHAKE.size])
        with contextlib.suppress(OSError):  # opened before the ack: the init is not reaped yet
            self.pidfd = os.pidfd_open(self.init_pid)
        with contextlib.suppress(OSError):
            os.write(self.ack, b"\x01")
        self._eof(fd)

    def _on_setup(self, data: bytes) -> None:
        if data[:1] != SETUP_OK:
            self.obs.setup_error = data[1:].decode("utf-8", "replace")
            self.ended = True

    def _on_status(self, data: bytes) -> None:
        self.pending[self.status_fd] += data
        record = self.pending[self.status_fd]
        if len(record) >= EXIT_RECORD.size:
            self.obs.exit = ExitRecord(*decode_exit(record[: EXIT_RECORD.size]))
            self.ended = True

    def _on_result(self, data: bytes) -> None:
        if self.obs.over or self.obs.protocol_error:
            return
        try:
            self.reader.max_payload = self.transcript.remaining_output
            self.reader.feed(data)
            while (frame := self.reader.next_frame()) is not None:
                self.transcript.accept(*frame)
                self.reader.max_payload = self.transcript.remaining_output
            self.ended |= self.transcript.finished  # all results are in: no need to wait
        except OversizeError:
            self.obs.over = "tensors"
            self.ended = True
        except ProtocolError as exc:
            self.obs.protocol_error = str(exc)
            self.ended = True

    def _capture(self, name: str, buffer: bytearray, data: bytes) -> None:
        room = self.limits.stdout_bytes - len(buffer)
        buffer += data[: max(room, 0)]
        if len(data) > room and not self.obs.over:
            self.obs.over = name
            self.ended = True

    def _on_stdout(self, data: bytes) -> None:
        self._capture("stdout", self.obs.stdout, data)

    def _on_stderr(self, data: bytes) -> None:
        self._capture("stderr", self.obs.stderr, data)
