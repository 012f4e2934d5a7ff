"""Thin ctypes bindings for the Linux calls Python 3.11's ``os`` module lacks."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os

from sandbox import syscalls

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000
MNT_DETACH = 0x2

M_ARENA_MAX = -8
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MADV_HUGEPAGE = 14
MADV_COLLAPSE = 25

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def _encode(value: str | None) -> bytes | None:
    return None if value is None else os.fsencode(value)


def _syscall(name: str, *args: object) -> int:
    numbers = syscalls.table()
    if numbers is None:
        raise OSError(38, f"{name}: unsupported architecture {syscalls.machine()}")
    return _check(_libc.syscall(ctypes.c_long(numbers[name]), *args), name)


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    result = _libc.mount(_encode(source), _encode(target), _encode(fstype), flags, _encode(data))
    _check(result, f"mount {target}")


def umount2(target: str, flags: int) -> None:
    _check(_libc.umount2(_encode(target), ctypes.c_int(flags)), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    _syscall("pivot_root", _encode(new_root), _encode(put_old))


def prctl(option: int, arg2: int = 0, arg3: int = 0) -> int:
    return _check(_libc.prctl(option, arg2, arg3, 0, 0), f"prctl {option}")


def make_undumpable() -> None:
    """Make /proc/self root-owned, so same-uid processes cannot read our environment.

    The bot and workers hold secrets (the Discord token, database passwords) in their
    environment; a learner job must never be able to read them through /proc, even in a
    degraded sandbox mode that shares their uid.
    """
    prctl(PR_SET_DUMPABLE, 0)


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(_libc.sethostname(raw, ctypes.c_size_t(len(raw))), "sethostname")


def clear_capabilities() -> None:
    """Empty the effective, permitted and inheritable sets (capset, version 3)."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    _syscall("capset", ctypes.byref(header), ctypes.byref(data))


def madvise(start: int, length: int, advice: int) -> None:
    _check(_libc.madvise(start, length, advice), f"madvise {advice}")


def keep_freed_memory(largest: int = 32 << 20) -> None:
    """Serve allocations up to ``largest`` from the heap and never give freed memory back:
    a speed trial's job then pays page faults once, not in each timed call, whatever its
    allocator happened to do before (glibc's mmap threshold adapts to what was freed)."""
    for option, value in ((M_MMAP_THRESHOLD, largest), (M_TRIM_THRESHOLD, 1 << 30)):
        if _libc.mallopt(ctypes.c_int(option), ctypes.c_int(value)) != 1:
            raise OSError(f"mallopt({option}) failed")


def trim_malloc() -> None:
    """Give the heap's free memory back to the system (glibc's ``malloc_trim``)."""
    _libc.malloc_trim(ctypes.c_size_t(0))


def limit_malloc_arenas(count: int) -> None:
    """Cap glibc's per-thread arenas, which each reserve 64 MiB of address space."""
    if _libc.mallopt(ctypes.c_int(M_ARENA_MAX), ctypes.c_int(count)) != 1:
        raise OSError("mallopt(M_ARENA_MAX) failed")


def install_seccomp(program: ctypes.Structure) -> None:
    """Load a prepared ``sock_fprog``; needs no_new_privs (or CAP_SYS_ADMIN)."""
    _check(
        _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0),
        "seccomp",
    )


def erase_inherited_strings(title: bytes) -> None:
    """Zero the environment strings the kernel put on this process's stack at exec, and
    write ``title`` over its command line (what ps and /proc/PID/cmdline show).

    For a process forked from another program: ``os.environ.clear()`` unsets the variables,
    but the original strings stay in memory, where a child of this process could read them.
    """
    with open("/proc/self/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    # fields[0] is field 3 of proc(5); arg_start, arg_end, env_start, env_end are 48 to 51
    arg_start, arg_end, env_start, env_end = (int(f) for f in fields[45:49])
    if 0 < env_start < env_end:
        ctypes.memset(env_start, 0, env_end - env_start)
    if 0 < arg_start < arg_end:
        shown = title[: arg_end - arg_start - 1]
        ctypes.memset(arg_start, 0, arg_end - arg_start)
        ctypes.memmove(arg_start, shown, len(shown))


F_SETPIPE_SZ = 1031
#: the default /proc/sys/fs/pipe-max-size: what an unprivileged process may ask for
PIPE_BYTES = 1 << 20


def widen_pipe(fd: int, size: int = PIPE_BYTES) -> None:
    """Give a pipe a larger buffer where the system allows it (best effort): megabytes of
    tensor bytes then cross in a few reads instead of hundreds of 64 KiB ones."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, size)
