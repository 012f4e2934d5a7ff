"""The job's filesystem: a fresh read-only root holding only what Python and torch need.

Instead of remounting the host's mounts read-only one by one (and missing a
submount), the job gets a new root: an empty tmpfs with read-only binds of the
system and Python directories, a minimal /dev, a fresh /proc and size-limited
tmpfs for /tmp, /dev/shm and the scratch directory.  The host's own files
(the database, the bot's config, other users' homes) are simply not there.

The zygote plans the binds once; the init opens every source (O_PATH) in the
new mount namespace before mounting the new root, then binds from
``/proc/self/fd/N``, so the new root cannot hide a source (the kernel refuses
sources opened in another mount namespace).
"""

from __future__ import annotations

import glob
import os
import site
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from sandbox import linux
from sandbox.api import Limits

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
SCRATCH = "/scratch"
WRITABLE = ("/tmp", "/dev/shm", SCRATCH)  # everything else in the job's root is read-only

# statvfs flag -> mount flag that a read-only remount must keep (locked in a user namespace)
_KEPT_FLAGS = {
    os.ST_NOSUID: linux.MS_NOSUID,
    os.ST_NODEV: linux.MS_NODEV,
    os.ST_NOEXEC: linux.MS_NOEXEC,
    os.ST_NOATIME: linux.MS_NOATIME,
    os.ST_NODIRATIME: linux.MS_NODIRATIME,
    os.ST_RELATIME: linux.MS_RELATIME,
}


@dataclass(frozen=True)
class Bind:
    path: str  # on the host, and the same path inside the job's root
    directory: bool
    flags: int  # mount flags kept on the read-only remount


@dataclass(frozen=True)
class Plan:
    binds: tuple[Bind, ...]
    devices: tuple[Bind, ...]
    links: tuple[tuple[str, str], ...]  # (path, symlink target), e.g. ("/lib", "usr/lib")


def python_paths(hidden: str) -> list[str]:
    """Where this interpreter finds its standard library and packages (torch included).

    Entries that are ``hidden`` or contain it (the bot's own checkout) are left out.
    """
    paths = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    paths.update(site.getsitepackages(), sys.path)
    found = {os.path.abspath(p) for p in paths if p and os.path.isdir(p)}
    return sorted(p for p in found if not _covered(hidden, [p]))


def _kept_flags(path: str) -> int:
    flags = os.statvfs(path).f_flag
    return sum(mount_flag for st_flag, mount_flag in _KEPT_FLAGS.items() if flags & st_flag)


def _describe(path: str) -> Bind:
    return Bind(path=path, directory=os.path.isdir(path), flags=_kept_flags(path))


def _covered(path: str, chosen: Iterable[str]) -> bool:
    return any(path == c or path.startswith(c.rstrip("/") + "/") for c in chosen)


def make_plan(extra_paths: Iterable[str], cuda: bool) -> Plan:
    """What to bind: system directories, ``extra_paths`` and, for CUDA, the GPU."""
    links: list[tuple[str, str]] = []
    chosen: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            links.append((path, os.readlink(path)))
        elif os.path.exists(path):
            chosen.append(path)
    for path in sorted(set(extra_paths) | ({"/sys"} if cuda else set())):
        if path != "/" and not _covered(path, chosen) and os.path.exists(path):
            chosen.append(path)
    devices = list(DEVICES) + (sorted(glob.glob("/dev/nvidia*")) if cuda else [])
    return Plan(
        binds=tuple(_describe(p) for p in chosen),
        devices=tuple(_describe(p) for p in devices if os.path.exists(p)),
        links=tuple(links),
    )


def _bind(root: str, bind: Bind, source_fd: int, extra_flags: int) -> None:
    target = root + bind.path
    if bind.directory:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    linux.mount(f"/proc/self/fd/{source_fd}", target, None, linux.MS_BIND)
    remount = linux.MS_REMOUNT | linux.MS_BIND | linux.MS_RDONLY | linux.MS_NOSUID
    linux.mount(None, target, None, remount | extra_flags | bind.flags)


def _tmpfs(path: str, options: str, flags: int = linux.MS_NOSUID | linux.MS_NODEV) -> None:
    os.makedirs(path, exist_ok=True)
    linux.mount("tmpfs", path, "tmpfs", flags, options)


def _read_only(path: str, flags: int) -> None:
    linux.mount(None, path, None, linux.MS_REMOUNT | linux.MS_BIND | linux.MS_RDONLY | flags)


def _populate_dev(root: str, devices: dict[Bind, int], limits: Limits) -> None:
    dev = root + "/dev"
    _tmpfs(dev, "size=64k,nr_inodes=64,mode=0755", linux.MS_NOSUID | linux.MS_NOEXEC)
    for device, fd in devices.items():
        _bind(root, device, fd, linux.MS_NOEXEC)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(target, f"{dev}/{name}")
    _tmpfs(f"{dev}/shm", f"size={limits.scratch_bytes},nr_inodes=1024,mode=1777")
    _read_only(dev, linux.MS_NOSUID | linux.MS_NOEXEC)


def build(plan: Plan, limits: Limits, uid: int, gid: int, mount_point: str = "/tmp") -> None:
    """Assemble the job's root at ``mount_point`` and pivot into it.

    Runs as the init of fresh mount and PID namespaces, before the job exists.
    """
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    sources = {b: os.open(b.path, os.O_PATH | os.O_CLOEXEC) for b in plan.binds + plan.devices}
    root = mount_point
    _tmpfs(root, "size=1m,nr_inodes=4096,mode=0755")
    for path, target in plan.links:
        os.symlink(target, root + path)
    # The writable tmpfs go first, so a Python installation that lives under /tmp (a
    # virtualenv in a checkout there) is bound on top of the job's /tmp, not hidden by it.
    _tmpfs(root + "/tmp", f"size={limits.scratch_bytes},nr_inodes=16384,mode=1777")
    owner = f"mode=0700,uid={uid},gid={gid}"
    _tmpfs(root + SCRATCH, f"size={limits.scratch_bytes},nr_inodes=16384,{owner}")
    for bind in plan.binds:
        _bind(root, bind, sources[bind], linux.MS_NODEV)
    _populate_dev(root, {d: sources[d] for d in plan.devices}, limits)
    for fd in sources.values():
        os.close(fd)
    proc = root + "/proc"
    os.makedirs(proc)
    linux.mount("proc", proc, "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    linux.mount(proc + "/sys", proc + "/sys", None, linux.MS_BIND)
    _read_only(proc + "/sys", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    os.chdir(root)
    linux.pivot_root(".", ".")
    linux.umount2(".", linux.MNT_DETACH)
    os.chdir("/")
    _read_only("/", linux.MS_NOSUID | linux.MS_NODEV)
