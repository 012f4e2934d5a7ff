"""A speed-trial job held from outside: stopped and resumed by signal, its memory read and
written by the trusted client while every thread of it is stopped.

The job of a turn is found through the kernel alone (the zygote's child, the keeper; its
child, the init; the init's only child, the job), never by asking the job.  A stopped
process cannot run a single instruction, so what is read from its memory after
``stop()`` returned is exactly what it had computed when its clock stopped, and what is
written into it before ``resume()`` cannot be seen early.  Reading another process's memory
needs ptrace access to it (root, or a dumpable job of the same user: see ``jail``).
Torch-free.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time

_libc = ctypes.CDLL(None, use_errno=True)


class _Iovec(ctypes.Structure):
    _fields_ = (("base", ctypes.c_void_p), ("length", ctypes.c_size_t))


for _name in ("process_vm_readv", "process_vm_writev"):
    _function = getattr(_libc, _name)
    _function.restype = ctypes.c_ssize_t
    _function.argtypes = [
        ctypes.c_int,
        ctypes.POINTER(_Iovec),
        ctypes.c_ulong,
        ctypes.POINTER(_Iovec),
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]

#: the longest a stop may take before the job counts as broken (a stopped thread answers
#: within microseconds; one in the kernel's uninterruptible sleep may take a while)
STOP_TIMEOUT_S = 5.0
_STOPPED_STATES = frozenset("Tt")


class HeldProcessError(Exception):
    """The job cannot be held: it is gone, will not stop, or its memory cannot be reached."""


def only_child(pid: int) -> int:
    """The one child process of ``pid``; HeldProcessError when it has none or several."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            children = handle.read().split()
    except OSError as exc:
        raise HeldProcessError(f"cannot list the children of {pid}: {exc}") from exc
    living = [int(child) for child in children if not _is_zombie(int(child))]
    if len(living) != 1:  # a zombie is an earlier job's keeper not reaped yet
        raise HeldProcessError(f"process {pid} has {len(living)} living children, not one")
    return living[0]


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return True  # gone already
    return stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] == b"Z"


class HeldProcess:
    """One job process, pinned by a pidfd so its pid cannot be reused under us."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        try:
            self._pidfd = os.pidfd_open(pid)
        except OSError as exc:
            raise HeldProcessError(f"the job is gone: {exc}") from exc
        self.stopped = False

    @classmethod
    def job_of(cls, zygote_pid: int) -> HeldProcess:
        """The zygote's running job: keeper -> init -> job, each the only child."""
        return cls(only_child(only_child(only_child(zygote_pid))))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._pidfd)

    def _signal(self, number: int) -> None:
        try:
            signal.pidfd_send_signal(self._pidfd, number)
        except OSError as exc:
            raise HeldProcessError(f"the job is gone: {exc}") from exc

    def resume(self) -> None:
        self.stopped = False
        self._signal(signal.SIGCONT)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Stop every thread and return once all of them are stopped."""
        self._signal(signal.SIGSTOP)
        deadline = time.perf_counter() + timeout_s
        while not self._all_stopped():
            if time.perf_counter() > deadline:
                raise HeldProcessError("the job did not stop")
        self.stopped = True

    def _all_stopped(self) -> bool:
        try:
            threads = os.listdir(f"/proc/{self.pid}/task")
        except OSError as exc:
            raise HeldProcessError(f"the job is gone: {exc}") from exc
        for thread in threads:
            try:
                with open(f"/proc/{self.pid}/task/{thread}/stat", "rb") as handle:
                    stat = handle.read()
            except FileNotFoundError:
                continue  # a thread that just exited
            except OSError as exc:
                raise HeldProcessError(f"the job is gone: {exc}") from exc
            state = chr(stat[stat.rindex(b")") + 2])
            if state == "Z" and thread == str(self.pid):
                raise HeldProcessError("the job exited")
            if state not in _STOPPED_STATES and state != "Z":
                return False
        return True

    def read(self, address: int, local: int, size: int) -> None:
        """Copy ``size`` bytes at ``address`` in the stopped job to ``local`` here."""
        self._require_stopped()
        self._transfer(_libc.process_vm_readv, local, address, size)

    def write(self, address: int, local: int, size: int) -> None:
        """Copy ``size`` bytes at ``local`` here to ``address`` in the stopped job."""
        self._require_stopped()
        self._transfer(_libc.process_vm_writev, local, address, size)

    def _require_stopped(self) -> None:
        if not self.stopped:
            raise HeldProcessError("the job's memory is touched only while it is stopped")

    def _transfer(self, function: object, local: int, remote: int, size: int) -> None:
        done = 0
        while done < size:
            mine = _Iovec(local + done, size - done)
            theirs = _Iovec(remote + done, size - done)
            moved = function(self.pid, ctypes.byref(mine), 1, ctypes.byref(theirs), 1, 0)  # type: ignore[operator]
            if moved <= 0:
                number = ctypes.get_errno()
                raise HeldProcessError(
                    f"cannot reach {size} bytes at {remote:#x} in the job: {os.strerror(number)}"
                )
            done += moved
        # the pidfd still refers to a live process, so the pid was not reused meanwhile
        self._signal(0)
