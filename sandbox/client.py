"""The trusted side: start the zygote and run jobs through it.

A worker starts its zygote by exec with an empty environment, so that nothing of the
worker's (a token, a database handle, the expected outputs) is in its memory.  On a
learner's own machine ``brrrbot grade`` may instead fork the first one from the CLI process,
which has imported torch but read no setting and no file yet (see ``fork_zygote``): one
torch import instead of two.

Each job's request goes from here straight into the job, and its results come straight back
(``sandbox.channel``): the zygote never holds either.  This module never imports torch
and never unpickles anything: results are frames whose every field is validated (codec.py)
before they become dataclasses.  A zygote that dies, hangs or talks nonsense is killed and
started afresh on the next run.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from sandbox import isolation, linux
from sandbox.api import IsolationLayer, JobStatus, SandboxRequest, SandboxResult
from sandbox.channel import JobChannel, ZygoteGone
from sandbox.codec import JobKind, JobOrder, encode_request
from sandbox.control import Control
from sandbox.framing import ProtocolError, frame_chunks
from sandbox.transcript import Transcript
from sandbox.turn_client import Turn, TurnOver
from sandbox.turns import TurnSpec
from sandbox.verdict import decide, skipped

PROJECT_ROOT = str(Path(__file__).resolve().parents[1])
_BOOTSTRAP = (
    "import sys, warnings; sys.path.insert(0, sys.argv[1]); "
    "warnings.filterwarnings('ignore', 'Failed to initialize NumPy'); "
    "from sandbox.zygote import main; main(sys.argv[2:])"
)
READY_HEADER_MAX = 4 << 20
CLOSE_WAIT_S = 2.0
FORKED_TITLE = b"brrrbot sandbox zygote (forked)"
MAX_DESCRIPTOR = 1 << 20  # closerange's bound: close_range(2) makes it cheap


class SandboxUnavailable(RuntimeError):
    """The zygote could not start."""


def _failure(request: SandboxRequest, status: JobStatus, message: str) -> SandboxResult:
    return SandboxResult(status, message, skipped(request.calls, ""))


class Zygote:
    """A warm sandbox process that grades one request at a time.

    The zygote picks the strongest sandbox mode that works here (``modes``
    forces a list to try, e.g. ``("bare",)``).  Whether a degraded sandbox is
    acceptable is the caller's policy: check ``minimum_ok(isolation_report())``.
    """

    def __init__(
        self,
        *,
        python: str = sys.executable,
        modes: tuple[str, ...] = (),
        start_timeout_s: float = 120.0,
        fork: bool = False,
        huge_pages: bool = True,
    ) -> None:
        self.python = python
        self.modes = modes
        self.start_timeout_s = start_timeout_s
        #: fork the first zygote from this process (``fork_zygote``) instead of exec; any
        #: later one execs, since by then this process holds what it has graded
        self.fork = fork
        self.huge_pages = huge_pages  # collapse into huge pages: slower start, faster jobs
        self._lock = threading.RLock()
        self._process: subprocess.Popen[bytes] | ForkedZygote | None = None
        self._control: Control | None = None
        self._ready: dict[str, Any] = {}
        self._partner: Zygote | None = None

    def __enter__(self) -> Zygote:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def job_uid(self) -> int | None:
        """The host uid that jobs run as (for audits: no process should outlive a job)."""
        return self._ready.get("job_uid")

    @property
    def mode(self) -> str | None:
        """The sandbox mode in use: "namespaces", "user-namespaces" or "bare"."""
        return self._ready.get("mode")

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the zygote unless it is running, and wait until it is ready; raises
        SandboxUnavailable."""
        with self._lock:
            if not self.alive:
                self.launch()
            if not self._ready:
                self._await_ready()

    def launch(self, *, partner: bool = False) -> None:
        """Start the zygote and return at once: it warms up and probes its sandbox while
        the caller does something else (``start``, or any run, then waits for it).
        ``partner`` starts the speed trials' second zygote too, the same way (forked as
        well while forking is still allowed)."""
        with self._lock:
            forking = self.fork
            self._kill()
            self._spawn()
            if partner and self._partner is None:
                self._partner = self._sibling(fork=forking)
                self._partner.launch()

    def partner(self) -> Zygote:
        """A second zygote like this one, for the reference's side of a speed trial: its
        jobs run on the same core under the same isolation, and holding one job of each
        lets the trial alternate the two without starting a process per call.  Started by
        exec on first use unless ``launch(partner=True)`` started it."""
        with self._lock:
            if self._partner is None:
                self._partner = self._sibling(fork=False)
                self._partner.launch()
            return self._partner

    def _sibling(self, *, fork: bool) -> Zygote:
        return Zygote(
            python=self.python,
            modes=self.modes,
            start_timeout_s=self.start_timeout_s,
            fork=fork,
            huge_pages=self.huge_pages,
        )

    def _spawn(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if self.fork:
                self.fork = False
                self._process = fork_zygote(theirs, self.modes, huge_pages=self.huge_pages)
            else:
                self._process = subprocess.Popen(
                    [self.python, "-I", "-X", "utf8", "-c", _BOOTSTRAP, PROJECT_ROOT, *self.modes],
                    stdin=theirs.fileno(),
                    stdout=subprocess.DEVNULL,
                    env={},
                    cwd="/",
                    close_fds=True,
                    start_new_session=True,
                )
        except OSError as exc:
            ours.close()
            raise SandboxUnavailable(f"cannot start {self.python}: {exc}") from exc
        finally:
            theirs.close()
        self._control = Control(ours, READY_HEADER_MAX)

    def _await_ready(self) -> None:
        assert self._control is not None
        try:
            header = self._control.read(time.monotonic() + self.start_timeout_s)
        except (OSError, TimeoutError, ProtocolError) as exc:
            self._kill()
            raise SandboxUnavailable(f"the zygote did not start: {exc}") from exc
        if header is None or header.get("kind") != "ready":
            self._kill()
            why = "it exited" if header is None else header.get("message", header)
            raise SandboxUnavailable(f"the zygote did not start: {why}")
        self._ready = header
        try:
            self._layers()
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self._kill()
            raise SandboxUnavailable(f"the zygote sent a malformed report: {exc!r}") from exc

    def _layers(self) -> list[IsolationLayer]:
        return isolation.build_layers(self._ready)

    def isolation_report(self) -> list[IsolationLayer]:
        """What a job gets on this machine, as observed by the zygote's probe job."""
        with self._lock:
            self.start()
            return self._layers()

    def _device(self, wanted: str) -> str:
        return "cuda" if wanted == "cuda" and self._ready.get("cuda") is True else "cpu"

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run one request; never raises for anything the submission does.

        A zygote found dead when the request is sent is replaced and the request
        sent once more (a job cannot kill its zygote, so a submission cannot
        drive this into a loop).
        """
        with self._lock:
            try:
                return self._attempt(request)
            except ZygoteGone:
                self._kill()
            try:
                return self._attempt(request)
            except ZygoteGone as exc:
                self._kill()
                return _failure(request, "internal_error", f"the sandbox died: {exc}")

    def _attempt(self, request: SandboxRequest) -> SandboxResult:
        try:
            self.start()
            return self._exchange(request)
        except SandboxUnavailable as exc:
            return _failure(request, "internal_error", str(exc))
        except ProtocolError as exc:
            self._kill()
            return _failure(request, "protocol_error", f"malformed reply from the sandbox: {exc}")
        except (OSError, TimeoutError) as exc:
            self._kill()
            return _failure(request, "internal_error", f"the sandbox failed: {exc!r}")

    def _exchange(self, request: SandboxRequest) -> SandboxResult:
        assert self._control is not None
        device = self._device(request.device)
        transcript = Transcript(request, request.limits)
        order = JobOrder(JobKind.CALLS, request.limits, device, pinned=False)
        channel = JobChannel(self._control, order, transcript)
        try:
            channel.send(frame_chunks(*encode_request(request)))
            channel.end_feed()
            observation = channel.finish()
        finally:
            channel.close()
        return decide(request, device, observation, transcript)

    def _kill(self) -> None:
        process, self._process = self._process, None
        control, self._control = self._control, None
        cgroup_dirs, self._ready = self._ready.get("cgroup_dirs", []), {}
        if control is not None:
            control.close()
        if process is None:
            return
        process.kill()
        process.wait()
        for path in cgroup_dirs:  # empty once the zygote is gone; a later zygote retries
            with contextlib.suppress(OSError):
                os.rmdir(path)

    @contextlib.contextmanager
    def turn(self, spec: TurnSpec, load_timeout_s: float | None = None) -> Iterator[Turn]:
        """Open a speed-trial turn (``sandbox.turn_client``), its source loaded within
        ``load_timeout_s`` (the wall limit by default), and end it on exit.  A sandbox that
        breaks during the turn is killed and the turn reports why, and so is one whose turn
        the caller left without ending it (its state is unknown).  One turn at a time."""
        with self._lock:
            try:
                self.start()
                assert self._control is not None and self.pid is not None
                timeout = spec.limits.wall_s if load_timeout_s is None else load_timeout_s
                turn = Turn.start(spec, self._control, self._device(spec.device), self.pid, timeout)
            except (SandboxUnavailable, OSError, TimeoutError, ProtocolError, ZygoteGone) as exc:
                self._kill()
                turn = Turn(spec, None, TurnOver("internal_error", f"the sandbox failed: {exc!r}"))
            try:
                yield turn
                turn.end()
            except (OSError, TimeoutError, ProtocolError, ZygoteGone) as exc:
                self._kill()
                turn.over = TurnOver("internal_error", f"the sandbox failed: {exc!r}")
            finally:
                if turn.open:
                    if turn.channel is not None:
                        turn.channel.close()
                    self._kill()

    def close(self) -> None:
        """Close the control socket (the zygote exits between jobs), then make sure it is
        gone."""
        with self._lock:
            partner, self._partner = self._partner, None
            if partner is not None:
                partner.close()
            process, control = self._process, self._control
            if process is None:
                return
            try:
                if control is not None:
                    control.sock.shutdown(socket.SHUT_WR)
                process.wait(CLOSE_WAIT_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self._kill()


class ForkedZygote:
    """A zygote forked from this process, behind the part of Popen's interface used here."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._pidfd = os.pidfd_open(pid)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                os.close(self._pidfd)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and timeout is not None:
            ready, _, _ = select.select([self._pidfd], [], [], timeout)
            if not ready:
                raise subprocess.TimeoutExpired(f"zygote {self.pid}", timeout)
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
            os.close(self._pidfd)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def fork_zygote(
    control: socket.socket, modes: tuple[str, ...], *, huge_pages: bool
) -> ForkedZygote:
    """Fork the zygote from this process: torch (imported by the caller) comes ready-made.

    Only for a process whose memory a job may see: the child inherits all of it, so the
    caller forks before it reads any setting, file or secret (``bot.worker.local``), and
    only once (``Zygote.fork``).  The child gets what an exec'd zygote gets otherwise: a
    session of its own, the control socket on 0 and no other descriptor, an empty
    environment and ``/`` as its directory; the environment it was started with is erased
    from memory, and it shows as FORKED_TITLE.
    """
    sys.stdout.flush()  # nothing buffered may be written twice
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.setsid()
            os.dup2(control.fileno(), 0)
            os.closerange(3, MAX_DESCRIPTOR)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the CLI to handle
            os.environ.clear()
            linux.erase_inherited_strings(FORKED_TITLE)
            os.chdir("/")
            from sandbox.zygote import main

            main(list(modes), huge_pages=huge_pages)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    return ForkedZygote(pid)
