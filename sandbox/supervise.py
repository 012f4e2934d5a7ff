"""Watch a running job's life from the zygote: its setup, its exit, the wall clock, the kill.

The zygote reads none of a job's data (``sandbox.pipes``): it waits until the init
reports that the job process ended, the setup fails, the wall deadline passes or its caller
says stop, then kills the whole job (the init through a pidfd, which takes its PID namespace
down; the process group and a sweep of the cgroup in the degraded mode) and reaps the keeper
(or, when the cgroup sweep signalled every process, leaves it to reap before the next job).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable

from sandbox.api import Limits
from sandbox.cgroups import ZygoteCgroup
from sandbox.jail import EXIT_RECORD, HANDSHAKE, SETUP_OK, Launched, decode_exit
from sandbox.observation import ExitRecord, Life
from sandbox.poller import Poller, read_some

REAP_S = 5.0


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
        limits: Limits,
        cgroup: ZygoteCgroup | None,
        group_kill: bool,
        poller: Poller,
    ) -> None:
        self.launched = launched
        self.limits = limits
        self.cgroup = cgroup
        self.group_kill = group_kill
        self.poller = poller
        self.life = Life()
        wiring = launched.wiring
        self.ack = wiring.ack.write
        self.handlers = {
            wiring.setup.read: self._on_setup,
            wiring.status.read: self._on_status,
            wiring.handshake.read: self._on_handshake,
        }
        self.open = set(self.handlers)
        for fd, handler in self.handlers.items():
            poller.on_readable(fd, lambda fd=fd, handler=handler: self._read(fd, handler))
        self.ended = False
        self.init_pid: int | None = None
        self.pidfd: int | None = None
        self.pending = {fd: b"" for fd in self.handlers}

    def pump_until(self, done: Callable[[], bool]) -> bool:
        """Serve the poller until ``done()`` holds (True) or the job ended or ran past its
        wall limit (False).  The wall limit counts from the launch."""
        deadline = self.launched.started + self.limits.wall_s
        while not self.ended and not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.life.timed_out = True
                return False
            self.poller.pump(remaining)
        return done()

    def finish(self, settled: bool) -> tuple[Life, int | None]:
        """Kill the whole job and reap it, unless ``settled`` (its watcher has everything it
        needs) and every process was signalled directly: then its teardown may overlap the
        report, and the keeper it returns is reaped before the next job."""
        unreaped = None
        try:
            self.life.wall_s = time.monotonic() - self.launched.started
            if self._kill() and settled:
                unreaped = self.launched.keeper
            else:
                reap(self.launched.keeper, REAP_S)
                self._collect()  # a status record the init wrote before it died
        finally:
            extra = [self.pidfd] if self.pidfd is not None else []
            for fd in [*self.open, self.ack, *extra]:
                self.poller.forget(fd)
                os.close(fd)
        return self.life, unreaped

    def _collect(self) -> None:
        while self.open and self.poller.pump(0.0):
            pass

    def _read(self, fd: int, handler: Callable[[bytes], None]) -> None:
        data = read_some(fd)
        if data is None:
            return
        if data:
            handler(data)
            return
        self.poller.forget(fd)
        self.open.discard(fd)
        os.close(fd)
        if fd == self.launched.wiring.status.read:
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
        self.poller.forget(fd)
        self.open.discard(fd)
        os.close(fd)

    def _on_setup(self, data: bytes) -> None:
        if data[:1] != SETUP_OK:
            self.life.setup_error = data[1:].decode("utf-8", "replace")
            self.ended = True

    def _on_status(self, data: bytes) -> None:
        fd = self.launched.wiring.status.read
        self.pending[fd] += data
        record = self.pending[fd]
        if len(record) >= EXIT_RECORD.size:
            self.life.exit = ExitRecord(*decode_exit(record[: EXIT_RECORD.size]))
            self.ended = True
