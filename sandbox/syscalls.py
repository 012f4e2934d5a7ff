"""System call numbers for the architectures the sandbox supports.

glibc has no wrappers for some of these (pivot_root, capset), and the seccomp
filter matches raw numbers, so the numbers live here, per architecture.
"""

from __future__ import annotations

import platform

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

_X86_64 = {
    "ptrace": 101,
    "syslog": 103,
    "setpgid": 109,
    "setsid": 112,
    "sched_setaffinity": 203,
    "capset": 126,
    "uselib": 134,
    "vhangup": 153,
    "modify_ldt": 154,
    "pivot_root": 155,
    "chroot": 161,
    "acct": 163,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "iopl": 172,
    "ioperm": 173,
    "init_module": 175,
    "delete_module": 176,
    "quotactl": 179,
    "lookup_dcookie": 212,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "migrate_pages": 256,
    "unshare": 272,
    "move_pages": 279,
    "perf_event_open": 298,
    "fanotify_init": 300,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
    "socket": 41,
    "socketpair": 53,
    "clone": 56,
    "fork": 57,
    "vfork": 58,
}

_AARCH64 = {
    "lookup_dcookie": 18,
    "umount2": 39,
    "mount": 40,
    "pivot_root": 41,
    "chroot": 51,
    "vhangup": 58,
    "quotactl": 60,
    "acct": 89,
    "capset": 91,
    "unshare": 97,
    "kexec_load": 104,
    "init_module": 105,
    "delete_module": 106,
    "syslog": 116,
    "ptrace": 117,
    "reboot": 142,
    "setpgid": 154,
    "setsid": 157,
    "sched_setaffinity": 122,
    "socket": 198,
    "socketpair": 199,
    "add_key": 217,
    "request_key": 218,
    "keyctl": 219,
    "clone": 220,
    "swapon": 224,
    "swapoff": 225,
    "migrate_pages": 238,
    "move_pages": 239,
    "perf_event_open": 241,
    "fanotify_init": 262,
    "name_to_handle_at": 264,
    "open_by_handle_at": 265,
    "setns": 268,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "kcmp": 272,
    "finit_module": 273,
    "bpf": 280,
    "userfaultfd": 282,
    "kexec_file_load": 294,
}

# Numbered alike on every architecture added since Linux 5.0.
_COMMON = {
    "pidfd_send_signal": 424,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "pidfd_open": 434,
    "clone3": 435,
    "pidfd_getfd": 438,
    "process_madvise": 440,
    "mount_setattr": 442,
    "quotactl_fd": 443,
    "open_tree_attr": 467,
}

TABLES: dict[str, dict[str, int]] = {
    "x86_64": _X86_64 | _COMMON,
    "aarch64": _AARCH64 | _COMMON,
}


def machine() -> str:
    return platform.machine()


def table(arch: str | None = None) -> dict[str, int] | None:
    """Syscall numbers for ``arch`` (default: this machine), None if unsupported."""
    return TABLES.get(arch or machine())
