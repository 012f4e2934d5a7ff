"""A canary job that reports what confinement it actually got.

The zygote runs it through the same path as a submission before accepting
work, so the isolation report states observed facts, not intentions.  No
learner code has run at that point, so its answer can be believed.
"""

from __future__ import annotations

import errno
import os
import resource
import socket
from typing import Any, NoReturn

from sandbox import framing
from sandbox.rootfs import WRITABLE

NAMESPACES = ("net", "pid", "mnt", "ipc", "uts", "user", "cgroup")
RLIMITS = ("AS", "CPU", "FSIZE", "NOFILE", "NPROC", "CORE", "STACK")
STATUS_KEYS = ("NoNewPrivs", "Seccomp", "CapEff", "CapBnd")


def _errno_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, str(exc.errno))


def _can_write(directory: str) -> str:
    path = os.path.join(directory, ".brrrbot-probe")
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        os.unlink(path)
    except OSError as exc:
        return _errno_name(exc)
    return "ok"


def _socket() -> str:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except OSError as exc:
        return _errno_name(exc)
    return "ok"


def _status() -> dict[str, str]:
    with open("/proc/self/status") as handle:
        pairs = (line.split(":", 1) for line in handle if ":" in line)
        return {k: v.strip() for k, v in pairs if k in STATUS_KEYS}


def _mounts() -> list[list[str]]:
    """[mount point, fs type, "ro"/"rw"] for every mount the job can see."""
    found = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            parts = left.split()
            mode = "ro" if "ro" in parts[5].split(",") else "rw"
            found.append([parts[4], right.split()[0], mode])
    return found


def collect(hidden: list[str], read_only: list[str]) -> dict[str, Any]:
    """Observed confinement; ``hidden`` host paths must be absent, ``read_only`` unwritable."""
    return {
        "pid": os.getpid(),
        "uid": os.getuid(),
        "gid": os.getgid(),
        "groups": os.getgroups(),
        "status": _status(),
        "rlimits": {n: list(resource.getrlimit(getattr(resource, f"RLIMIT_{n}"))) for n in RLIMITS},
        "namespaces": {n: os.readlink(f"/proc/self/ns/{n}") for n in NAMESPACES},
        "socket": _socket(),
        "writes": {p: _can_write(p) for p in ["/", *read_only, *WRITABLE, os.getcwd()]},
        "visible": {path: os.path.exists(path) for path in hidden},
        "mounts": _mounts(),
        "cwd": os.getcwd(),
    }


def run(out: int, hidden: list[str], read_only: list[str]) -> NoReturn:
    facts = collect(hidden, read_only)
    framing.write_frame(out, {"kind": "probe", "facts": facts})
    os._exit(0)
