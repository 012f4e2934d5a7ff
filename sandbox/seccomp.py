"""A classic-BPF seccomp deny-list, assembled by hand (no libseccomp needed).

The filter is built once in the zygote and loaded in every job after
no_new_privs.  It is a deny-list: the job still gets the ordinary syscalls
torch needs, while the kernel surfaces that let a process escape or spy
(ptrace, mounts, namespaces, BPF, io_uring, keyrings, sockets, ...) fail with
EPERM.  ``clone3`` fails with ENOSYS because glibc then falls back to
``clone``, whose flags a classic filter can inspect.
"""

from __future__ import annotations

import ctypes
import errno
import struct
from dataclasses import dataclass

from sandbox import linux, syscalls

DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "process_madvise",
    "kcmp",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "userfaultfd",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "open_tree_attr",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "setsid",
    "setpgid",
    "sched_setaffinity",  # a job stays on the core it was given (cores.py)
    "socket",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "name_to_handle_at",
    "open_by_handle_at",
    "fanotify_init",
    "lookup_dcookie",
    "syslog",
    "vhangup",
    "move_pages",
    "migrate_pages",
    "iopl",
    "ioperm",
    "modify_ldt",
    "uselib",
)

NAMESPACE_FLAGS = (
    linux.CLONE_NEWNS
    | linux.CLONE_NEWCGROUP
    | linux.CLONE_NEWUTS
    | linux.CLONE_NEWIPC
    | linux.CLONE_NEWUSER
    | linux.CLONE_NEWPID
    | linux.CLONE_NEWNET
)
AF_UNIX = 1
X32_SYSCALL_BIT = 0x40000000

# classic BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000

_OFFSET_NR = 0
_OFFSET_ARCH = 4
_OFFSET_ARG0 = 16  # low 32 bits of args[0] on little-endian machines


@dataclass(frozen=True)
class _Op:
    code: int
    k: int
    true: str | None = None  # label to jump to; None means the next instruction
    false: str | None = None


def _program(arch: str, numbers: dict[str, int]) -> list[_Op | str]:
    """The filter as instructions and label strings, in order (BPF only jumps forward)."""
    ops: list[_Op | str] = [
        _Op(_LD_W_ABS, _OFFSET_ARCH),
        _Op(_JEQ_K, syscalls.AUDIT_ARCH[arch], None, "kill"),
        _Op(_LD_W_ABS, _OFFSET_NR),
    ]
    if arch == "x86_64":
        ops.append(_Op(_JGE_K, X32_SYSCALL_BIT, "eperm"))
    ops += [_Op(_JEQ_K, numbers[name], "eperm") for name in DENIED if name in numbers]
    ops += [
        _Op(_JEQ_K, numbers["clone3"], "enosys"),
        _Op(_JEQ_K, numbers["clone"], "clone"),
        _Op(_JEQ_K, numbers["socketpair"], "socketpair"),
        _Op(_RET_K, RET_ALLOW),
        "clone",
        _Op(_LD_W_ABS, _OFFSET_ARG0),
        _Op(_JSET_K, NAMESPACE_FLAGS, "eperm", "allow"),
        "socketpair",
        _Op(_LD_W_ABS, _OFFSET_ARG0),
        _Op(_JEQ_K, AF_UNIX, "allow", "eperm"),
        "allow",
        _Op(_RET_K, RET_ALLOW),
        "eperm",
        _Op(_RET_K, RET_ERRNO | errno.EPERM),
        "enosys",
        _Op(_RET_K, RET_ERRNO | errno.ENOSYS),
        "kill",
        _Op(_RET_K, RET_KILL_PROCESS),
    ]
    return ops


CLONE_THREAD = 0x00010000


def _threads_only_program(arch: str, numbers: dict[str, int]) -> list[_Op | str]:
    """A second filter, stacked on the first in a speed trial's job: it may start threads
    but no process, so stopping its one process stops everything it runs."""
    ops: list[_Op | str] = [
        _Op(_LD_W_ABS, _OFFSET_ARCH),
        _Op(_JEQ_K, syscalls.AUDIT_ARCH[arch], None, "kill"),
        _Op(_LD_W_ABS, _OFFSET_NR),
    ]
    ops += [_Op(_JEQ_K, numbers[name], "eperm") for name in ("fork", "vfork") if name in numbers]
    ops += [
        _Op(_JEQ_K, numbers["clone"], "clone"),
        _Op(_RET_K, RET_ALLOW),
        "clone",
        _Op(_LD_W_ABS, _OFFSET_ARG0),
        _Op(_JSET_K, CLONE_THREAD, "allow", "eperm"),
        "allow",
        _Op(_RET_K, RET_ALLOW),
        "eperm",
        _Op(_RET_K, RET_ERRNO | errno.EPERM),
        "kill",
        _Op(_RET_K, RET_KILL_PROCESS),
    ]
    return ops


def assemble(arch: str, *, threads_only: bool = False) -> bytes:
    """The filter for ``arch`` as an array of ``struct sock_filter`` (``threads_only``: the
    stacked filter of a speed trial's job)."""
    numbers = syscalls.table(arch)
    if numbers is None:
        raise ValueError(f"no syscall table for {arch}")
    listing = (_threads_only_program if threads_only else _program)(arch, numbers)
    labels: dict[str, int] = {}
    code: list[_Op] = []
    for item in listing:
        if isinstance(item, str):
            labels[item] = len(code)
        else:
            code.append(item)

    def offset(label: str | None, index: int) -> int:
        if label is None:
            return 0
        distance = labels[label] - index - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"jump to {label} out of range")
        return distance

    return b"".join(
        struct.pack("=HBBI", op.code, offset(op.true, i), offset(op.false, i), op.k)
        for i, op in enumerate(code)
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


class Filter:
    """A ready-to-load filter; keeps its buffer alive across forks."""

    def __init__(self, arch: str, *, threads_only: bool = False) -> None:
        code = assemble(arch, threads_only=threads_only)
        self._buffer = ctypes.create_string_buffer(code, len(code))
        self._program = _SockFprog(len(code) // 8, ctypes.addressof(self._buffer))

    def install(self) -> None:
        linux.install_seccomp(self._program)


def build(*, threads_only: bool = False) -> Filter | None:
    """The filter for this machine, or None where the architecture is unsupported."""
    arch = syscalls.machine()
    return Filter(arch, threads_only=threads_only) if arch in syscalls.AUDIT_ARCH else None
