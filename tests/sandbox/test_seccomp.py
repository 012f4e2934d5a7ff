"""The hand-assembled seccomp filter: its numbers, its jumps, and its effect on a process."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import json
import os
import struct
import threading
from typing import Any

import pytest

from sandbox import linux, seccomp, syscalls


@pytest.mark.parametrize("arch", sorted(syscalls.TABLES))
def test_every_jump_lands_forward_inside_the_program(arch: str) -> None:
    code = seccomp.assemble(arch)
    assert len(code) % 8 == 0
    count = len(code) // 8
    for index in range(count):
        opcode, true, false, _ = struct.unpack_from("=HBBI", code, index * 8)
        if opcode & 0x07 == 0x05:  # BPF_JMP
            assert index + 1 + max(true, false) < count
    last = struct.unpack_from("=HBBI", code, (count - 1) * 8)
    assert last[0] == 0x06  # the program ends with a return


def _libseccomp() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        library = ctypes.CDLL(name)
    except OSError:
        return None
    library.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    return library


@pytest.mark.parametrize("arch", sorted(syscalls.TABLES))
def test_syscall_numbers_agree_with_libseccomp(arch: str) -> None:
    library = _libseccomp()
    if library is None:
        pytest.skip("libseccomp is not installed")
    checked = 0
    for name, number in syscalls.TABLES[arch].items():
        resolved = library.seccomp_syscall_resolve_name_arch(
            syscalls.AUDIT_ARCH[arch], name.encode()
        )
        if resolved >= 0:  # negative: a syscall newer than this libseccomp
            assert resolved == number, name
            checked += 1
    assert checked > 40


def _in_filtered_child() -> dict[str, Any]:
    """Fork, load the filter, try things, report errno values through a pipe."""
    syscall_filter = seccomp.build()
    assert syscall_filter is not None
    numbers = syscalls.table()
    assert numbers is not None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
            syscall_filter.install()

            me = os.getpid()

            def attempt(*args: int) -> int:
                code = libc.syscall(*map(ctypes.c_long, args))
                if os.getpid() != me:  # a clone the filter let through: only report once
                    os._exit(0)
                return 0 if code >= 0 else ctypes.get_errno()

            pair = (ctypes.c_int * 2)()
            report = {
                "socket_inet": attempt(numbers["socket"], 2, 1, 0),
                "socket_unix": attempt(numbers["socket"], 1, 1, 0),
                "socketpair_unix": libc.socketpair(1, 1, 0, pair) and ctypes.get_errno(),
                "socketpair_inet": libc.socketpair(2, 1, 0, pair) and ctypes.get_errno(),
                "unshare": attempt(numbers["unshare"], linux.CLONE_NEWUSER),
                "clone_newns": attempt(numbers["clone"], linux.CLONE_NEWNS | 17, 0, 0, 0, 0),
                "clone3": attempt(numbers["clone3"], 0, 0),
                "ptrace": attempt(numbers["ptrace"], 16, 1, 0, 0),
                "io_uring": attempt(numbers["io_uring_setup"], 1, 0),
                "bpf": attempt(numbers["bpf"], 0, 0, 0),
                "mount": attempt(numbers["mount"], 0, 0, 0, 0, 0),
                "setsid": attempt(numbers["setsid"]),
            }
            thread = threading.Thread(target=lambda: None)
            thread.start()
            thread.join()
            child = os.fork()
            if child == 0:
                os._exit(7)
            report["fork_status"] = os.waitpid(child, 0)[1]
            os.write(write, json.dumps(report).encode())
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 4096):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(data)


def test_filter_denies_escapes_and_keeps_threads_and_fork() -> None:
    if seccomp.build() is None:
        pytest.skip("no seccomp filter for this architecture")
    report = _in_filtered_child()
    denied = [
        "socket_inet",
        "socket_unix",
        "socketpair_inet",
        "unshare",
        "clone_newns",
        "ptrace",
        "io_uring",
        "bpf",
        "mount",
        "setsid",
    ]
    assert {name: report[name] for name in denied} == dict.fromkeys(denied, errno.EPERM)
    assert report["clone3"] == errno.ENOSYS  # so glibc falls back to clone
    assert report["socketpair_unix"] == 0
    assert os.WEXITSTATUS(report["fork_status"]) == 7


def test_the_default_filter_is_the_deny_list_and_the_stacked_one_only_stops_processes() -> None:
    """assemble(arch) with no option builds the job's filter, which compares every denied
    call's number; the speed trial's stacked filter compares only fork, vfork and clone."""
    numbers = syscalls.TABLES["x86_64"]

    def compared(code: bytes) -> set[int]:
        ops = [struct.unpack_from("=HBBI", code, i) for i in range(0, len(code), 8)]
        return {k for opcode, _, _, k in ops if opcode == 0x15}  # JEQ K

    full = compared(seccomp.assemble("x86_64"))
    assert {numbers[name] for name in ("ptrace", "mount", "bpf", "unshare", "socket")} <= full
    stacked = compared(seccomp.assemble("x86_64", threads_only=True))
    audit_arch = syscalls.AUDIT_ARCH["x86_64"]
    assert stacked == {audit_arch, numbers["fork"], numbers["vfork"], numbers["clone"]}
