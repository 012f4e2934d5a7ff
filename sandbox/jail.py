"""Start one job: zygote -> keeper -> init (PID 1 of new namespaces) -> job (PID 2).

* The keeper stays outside the new PID namespace, unshares the namespaces and
  forks the init; it tells the zygote the init's pid and reaps it, so once the
  keeper has exited the whole namespace is gone.
* The init builds the filesystem, forks the job and reaps everything; when the
  job ends it reports the job's exit status and exits, and the kernel kills
  every process left in the namespace (setsid daemons included).  The job must
  not be PID 1 itself: PID 1 ignores SIGXCPU, the CPU limit's signal.
* The job confines itself (confine.py) and runs ``body``.

In the degraded "bare" mode nothing is unshared: the init is only a session
leader, and the zygote kills the job's process group (seccomp forbids leaving
it) and sweeps its cgroup instead of killing a PID namespace.

Each stage that fails before learner code runs writes ``\\x01`` and a reason to
the setup pipe; the job writes ``\\x00`` once confined and then closes it, so
nothing the submission does can forge a setup report.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from sandbox import confine, descriptors, linux, rootfs
from sandbox.api import Limits
from sandbox.cgroups import ZygoteCgroup
from sandbox.pipes import JobEnds, Pipe
from sandbox.seccomp import Filter

NAMESPACES = (
    linux.CLONE_NEWNS
    | linux.CLONE_NEWPID
    | linux.CLONE_NEWNET
    | linux.CLONE_NEWIPC
    | linux.CLONE_NEWUTS
    | linux.CLONE_NEWCGROUP
)
RESULT_FD = 3
_SETUP_FD = 4
FEED_FD = 5  # the job's request, then a speed trial's inputs, straight from the client
SETUP_OK = b"\x00"
SETUP_FAILED = b"\x01"
_FAILED_EXIT = 70
EXIT_RECORD = struct.Struct("=iiQ")  # exited normally?, code or signal, CPU microseconds
HANDSHAKE = struct.Struct("=i")  # the init's pid, keeper -> zygote
JOB_ENV = {"HOME": rootfs.SCRATCH, "TMPDIR": "/tmp", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
HOSTNAME = "sandbox"


@dataclass(frozen=True)
class Mode:
    name: str
    flags: int  # namespaces to unshare (0: none, the degraded mode)
    user_namespace: bool


MODES = {
    "namespaces": Mode("namespaces", NAMESPACES, False),
    "user-namespaces": Mode("user-namespaces", NAMESPACES | linux.CLONE_NEWUSER, True),
    "bare": Mode("bare", 0, False),
}


@dataclass(frozen=True)
class Jail:
    """Everything a job needs from the zygote, prepared once before any job."""

    mode: Mode
    plan: rootfs.Plan
    syscall_filter: Filter | None
    identity: confine.Identity
    host_ids: tuple[int, int]  # the zygote's uid and gid, for user-namespace maps
    cap_last: int
    cgroup: ZygoteCgroup | None  # None where no memory or pids controller is usable


@dataclass(frozen=True)
class Wiring:
    """The pipes of one job's life: ``setup``, ``status`` and ``handshake`` flow towards the
    zygote, ``ack`` towards the job; ``ends`` are its data pipes, which the zygote never reads."""

    setup: Pipe
    status: Pipe
    handshake: Pipe
    ack: Pipe
    ends: JobEnds

    @classmethod
    def new(cls, ends: JobEnds) -> Wiring:
        return cls(*Pipe.several(4), ends=ends)

    def child_ends(self) -> set[int]:
        ends = {p.write for p in (self.setup, self.status, self.handshake)}
        return ends | {self.ack.read, *self.ends.fds}

    def zygote_ends(self) -> set[int]:
        return {p.read for p in (self.setup, self.status, self.handshake)} | {self.ack.write}


@dataclass(frozen=True)
class Launched:
    keeper: int
    wiring: Wiring
    started: float


Body = Callable[[int], NoReturn]


def _fail(setup_fd: int, stage: str, exc: BaseException) -> NoReturn:
    try:
        os.write(setup_fd, SETUP_FAILED + f"{stage}: {exc}".encode()[:2000])
    finally:
        os._exit(_FAILED_EXIT)


def _map_ids(identity: confine.Identity, host_ids: tuple[int, int]) -> None:
    """Map the job's ids onto the zygote's own (all an unprivileged user may map).

    The zygote is not dumpable, which makes /proc/self root-owned; the keeper is
    dumpable just long enough to write its own maps.
    """
    linux.prctl(linux.PR_SET_DUMPABLE, 1)
    for name, value in (
        ("setgroups", "deny"),
        ("uid_map", f"{identity.uid} {host_ids[0]} 1"),
        ("gid_map", f"{identity.gid} {host_ids[1]} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(value)
    linux.prctl(linux.PR_SET_DUMPABLE, 0)


def launch(
    jail: Jail, limits: Limits, device: str, body: Body, ends: JobEnds, core: int | None = None
) -> Launched:
    """Start a job on its data pipes ``ends`` (closed here, whatever happens); ``core`` pins
    it to that one CPU (seccomp keeps it there)."""
    try:
        wiring = Wiring.new(ends)
    except OSError:
        ends.close()
        raise
    zygote = os.getpid()
    started = time.monotonic()
    try:
        keeper = os.fork()
    except OSError:
        for fd in wiring.child_ends() | wiring.zygote_ends():
            os.close(fd)
        raise
    if keeper == 0:
        try:
            _keeper(jail, limits, device, body, wiring, zygote, core)
        finally:
            os._exit(_FAILED_EXIT)
    for fd in wiring.child_ends():
        os.close(fd)
    for fd in wiring.zygote_ends() - {wiring.ack.write}:
        os.set_blocking(fd, False)
    return Launched(keeper, wiring, started)


def _keeper(
    jail: Jail,
    limits: Limits,
    device: str,
    body: Body,
    wiring: Wiring,
    zygote: int,
    core: int | None,
) -> NoReturn:
    stage = "keeper"
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != zygote:
            os._exit(_FAILED_EXIT)
        descriptors.close_all_except({0, 1, 2, *wiring.child_ends()})
        if jail.mode.flags:
            stage = "unshare"
            linux.unshare(jail.mode.flags)
            if jail.mode.user_namespace:
                _map_ids(jail.identity, jail.host_ids)
        life = Pipe.new()  # the init polls it to learn whether the keeper is still alive
        init = os.fork()
        if init == 0:
            try:
                _init(jail, limits, device, body, wiring, life.read, core)
            finally:
                os._exit(_FAILED_EXIT)
    except BaseException as exc:
        _fail(wiring.setup.write, stage, exc)
    descriptors.close_all_except({0, 1, 2, wiring.handshake.write, wiring.ack.read, life.write})
    os.write(wiring.handshake.write, HANDSHAKE.pack(init))
    os.read(wiring.ack.read, 1)  # the zygote holds a pidfd of the init from here on
    os.waitpid(init, 0)
    os._exit(0)


def _init(
    jail: Jail,
    limits: Limits,
    device: str,
    body: Body,
    wiring: Wiring,
    life: int,
    core: int | None,
) -> NoReturn:
    stage = "init"
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        if select.select([life], [], [], 0)[0]:  # the keeper died before PDEATHSIG was armed
            os._exit(_FAILED_EXIT)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.setsid()
        os.umask(0o022)
        if jail.mode.flags & linux.CLONE_NEWNS:
            stage = "filesystem"
            rootfs.build(jail.plan, limits, jail.identity.uid, jail.identity.gid)
            linux.sethostname(HOSTNAME)
            os.chdir(rootfs.SCRATCH)
        else:
            os.chdir("/")
        keep = {0, 1, 2, *wiring.ends.fds, wiring.setup.write, wiring.status.write}
        descriptors.close_all_except(keep)
        job = os.fork()
        if job == 0:
            try:
                _job(jail, limits, device, body, wiring, core)
            finally:
                os._exit(_FAILED_EXIT)
    except BaseException as exc:
        _fail(wiring.setup.write, stage, exc)
    descriptors.close_all_except({wiring.status.write})
    while True:  # as PID 1, also reap orphans until the job itself ends
        pid, status, usage = os.wait4(-1, 0)
        if pid == job:
            break
    exited = os.WIFEXITED(status)
    value = os.WEXITSTATUS(status) if exited else os.WTERMSIG(status)
    cpu_us = int((usage.ru_utime + usage.ru_stime) * 1e6)
    os.write(wiring.status.write, EXIT_RECORD.pack(int(exited), value, cpu_us))
    os._exit(0)


def _job(
    jail: Jail, limits: Limits, device: str, body: Body, wiring: Wiring, core: int | None
) -> NoReturn:
    setup_fd = wiring.setup.write
    stage = "job"
    try:
        null = os.open("/dev/null", os.O_RDWR)
        ends = wiring.ends
        descriptors.arrange([null, ends.stdout, ends.stderr, ends.result, setup_fd, ends.feed])
        setup_fd = _SETUP_FD
        if core is not None:
            os.sched_setaffinity(0, {core})
        os.environ.clear()
        os.environ.update(JOB_ENV)
        stage = "confine"
        confine.apply(limits, jail.identity, jail.syscall_filter, device == "cuda", jail.cap_last)
        os.write(setup_fd, SETUP_OK)
        os.close(setup_fd)
    except BaseException as exc:
        _fail(setup_fd, stage, exc)
    body(RESULT_FD)


def decode_exit(record: bytes) -> tuple[bool, int, float]:
    """Decode the init's report: (exited normally, exit code or signal, CPU seconds)."""
    exited, value, cpu_us = EXIT_RECORD.unpack(record)
    return bool(exited), value, cpu_us / 1e6


def cap_last() -> int:
    """The highest capability number this kernel knows."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 63
