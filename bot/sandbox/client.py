"""The trusted side: start the zygote and run jobs through it.

A worker starts its zygote by exec with an empty environment, so that nothing of the
worker's (a token, a database handle, the expected outputs) is in its memory.  On a
learner's own machine ``brrrbot grade`` may instead fork it from the CLI process, which
has imported torch but planned nothing yet and holds no secrets: one torch import instead
of two (see ``fork_zygote``).

This module never imports torch and never unpickles anything: results are
frames whose every field is validated (codec.py) before they become
dataclasses.  A zygote that dies, hangs or talks nonsense is killed and
started afresh on the next run.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from bot.sandbox import framing, isolation, linux
from bot.sandbox.api import IsolationLayer, JobStatus, SandboxRequest, SandboxResult
from bot.sandbox.codec import decode_result, encode_request
from bot.sandbox.framing import FrameReader, ProtocolError
from bot.sandbox.turn_client import Turn, TurnOver
from bot.sandbox.turns import TurnSpec
from bot.sandbox.verdict import skipped

PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
_BOOTSTRAP = (
    "import sys, warnings; sys.path.insert(0, sys.argv[1]); "
    "warnings.filterwarnings('ignore', 'Failed to initialize NumPy'); "
    "from bot.sandbox.zygote import main; main(sys.argv[2:])"
)
READY_HEADER_MAX = 4 << 20
RESPONSE_MARGIN_S = 30.0  # setup, teardown and transfer on top of the job's wall limit
CLOSE_WAIT_S = 2.0
FORKED_TITLE = b"brrrbot sandbox zygote (forked)"
MAX_DESCRIPTOR = 1 << 20  # closerange's bound: close_range(2) makes it cheap


class SandboxUnavailable(RuntimeError):
    """The zygote could not start."""


class _ZygoteGone(Exception):
    """The zygote's pipes closed: it died (killed from outside, or crashed)."""


def _result_header_max(request: SandboxRequest) -> int:
    """JSON may escape a character into six bytes; error texts and op lists are capped."""
    return (4 << 20) + 12 * request.limits.stdout_bytes + len(request.calls) * (1 << 20)


def _failure(request: SandboxRequest, status: JobStatus, message: str) -> SandboxResult:
    return SandboxResult(status, message, skipped(request.calls, ""))


class Zygote:
    """A warm, exec-started sandbox process that grades one request at a time.

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
        self.fork = fork  # fork from this process (see ``fork_zygote``) instead of exec
        self.huge_pages = huge_pages  # collapse into huge pages: slower start, faster jobs
        self._lock = threading.RLock()
        self._process: subprocess.Popen[bytes] | ForkedZygote | None = None
        self._ready: dict[str, Any] = {}

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

    def launch(self) -> None:
        """Start the zygote and return at once: it warms up and probes its sandbox while
        the caller does something else (``start``, or any run, then waits for it)."""
        with self._lock:
            self._kill()
            self._spawn()

    def _spawn(self) -> None:
        try:
            if self.fork:
                self._process = fork_zygote(self.modes, huge_pages=self.huge_pages)
            else:
                self._process = subprocess.Popen(
                    [self.python, "-I", "-X", "utf8", "-c", _BOOTSTRAP, PROJECT_ROOT, *self.modes],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    env={},
                    cwd="/",
                    close_fds=True,
                    start_new_session=True,
                )
        except OSError as exc:
            raise SandboxUnavailable(f"cannot start {self.python}: {exc}") from exc
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                linux.widen_pipe(stream.fileno())

    def _await_ready(self) -> None:
        try:
            header = self._read(FrameReader(READY_HEADER_MAX, 0), self.start_timeout_s)[0]
        except (OSError, TimeoutError, ProtocolError, _ZygoteGone) as exc:
            self._kill()
            raise SandboxUnavailable(f"the zygote did not start: {exc}") from exc
        if header.get("kind") != "ready":
            self._kill()
            raise SandboxUnavailable(f"the zygote did not start: {header.get('message', header)}")
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

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run one request; never raises for anything the submission does.

        A zygote found dead when the request is sent is replaced and the request
        sent once more (a job cannot kill its zygote, so a submission cannot
        drive this into a loop).
        """
        with self._lock:
            try:
                return self._attempt(request)
            except _ZygoteGone:
                self._kill()
            try:
                return self._attempt(request)
            except _ZygoteGone as exc:
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
        assert self._process is not None and self._process.stdin is not None
        header, payload = encode_request(request)
        try:
            framing.write_frame(self._process.stdin.fileno(), header, payload)
        except BrokenPipeError as exc:
            raise _ZygoteGone("it closed its input") from exc
        reader = FrameReader(_result_header_max(request), request.limits.output_bytes)
        reply, reply_payload = self._read(reader, request.limits.wall_s + RESPONSE_MARGIN_S)
        if reply.get("kind") == "error":
            message = str(reply.get("message", ""))[:2000]
            return _failure(request, "internal_error", f"sandbox refused the job: {message}")
        return decode_result(reply, reply_payload, request)

    def _read(self, reader: FrameReader, timeout_s: float) -> tuple[dict[str, Any], bytes]:
        assert self._process is not None and self._process.stdout is not None
        frame = framing.read_frame(
            self._process.stdout.fileno(), reader, time.monotonic() + timeout_s
        )
        if frame is None:
            raise _ZygoteGone("it closed its output")
        return frame

    def _kill(self) -> None:
        process, self._process = self._process, None
        cgroup_dirs, self._ready = self._ready.get("cgroup_dirs", []), {}
        if process is None:
            return
        process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()
        for path in cgroup_dirs:  # empty once the zygote is gone; a later zygote retries
            with contextlib.suppress(OSError):
                os.rmdir(path)

    @contextlib.contextmanager
    def turn(self, spec: TurnSpec) -> Iterator[Turn]:
        """Open a speed-trial turn (``bot.sandbox.turn_client``) and end it on exit.  A
        sandbox that breaks during the turn is killed and the turn reports why."""
        with self._lock:
            turn: Turn | None = None
            try:
                self.start()
                process = self._process
                assert process is not None and process.stdin and process.stdout
                turn = Turn(spec, (process.stdin.fileno(), process.stdout.fileno()))
                turn.open()
            except (SandboxUnavailable, OSError, EOFError, TimeoutError, ProtocolError) as exc:
                self._kill()
                turn = Turn(
                    spec, (-1, -1), TurnOver("internal_error", f"the sandbox failed: {exc!r}")
                )
            try:
                yield turn
                turn.end()
            except (OSError, EOFError, TimeoutError, ProtocolError) as exc:
                self._kill()
                turn.over = TurnOver("internal_error", f"the sandbox failed: {exc!r}")

    def close(self) -> None:
        """Close the zygote's stdin (it exits between jobs), then make sure it is gone."""
        with self._lock:
            process = self._process
            if process is None:
                return
            try:
                if process.stdin is not None:
                    process.stdin.close()
                process.wait(CLOSE_WAIT_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self._kill()


class ForkedZygote:
    """A zygote forked from this process, behind the part of Popen's interface used here."""

    def __init__(self, pid: int, requests: int, replies: int) -> None:
        self.pid = pid
        self.stdin: BinaryIO | None = os.fdopen(requests, "wb", buffering=0)
        self.stdout: BinaryIO | None = os.fdopen(replies, "rb", buffering=0)
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


def fork_zygote(modes: tuple[str, ...], *, huge_pages: bool) -> ForkedZygote:
    """Fork the zygote from this process: torch (imported by the caller) comes ready-made.

    Only for a process whose memory a job may see: the child inherits all of it, so the
    caller forks before it plans anything (the expected outputs must never be there) and
    only when it holds no secret (``brrrbot grade`` checks its settings).  The child gets
    what an exec'd zygote gets otherwise: a session of its own, the protocol pipes on 0
    and 1 and no other descriptor, an empty environment and ``/`` as its directory; the
    environment it was started with is erased from memory, and it shows as FORKED_TITLE.
    """
    requests_read, requests_write = os.pipe()
    replies_read, replies_write = os.pipe()
    sys.stdout.flush()  # nothing buffered may be written twice
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.setsid()
            os.dup2(requests_read, 0)
            os.dup2(replies_write, 1)
            os.closerange(3, MAX_DESCRIPTOR)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the CLI to handle
            os.environ.clear()
            linux.erase_inherited_strings(FORKED_TITLE)
            os.chdir("/")
            from bot.sandbox.zygote import main

            main(list(modes), huge_pages=huge_pages)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(requests_read)
    os.close(replies_write)
    return ForkedZygote(pid, requests_write, replies_read)
