"""Memory and pids cgroups for jobs, on cgroup v1 or v2, whichever holds the controller.

rlimits cannot cap resident memory or the processes of root, and a memory cgroup
is the only way to tell "killed for memory" from any other SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass, field

from sandbox.api import Limits

CONTROLLERS = ("memory", "pids")
PREFIX = "brrrbot-"
_SWEEP_ROUNDS = 64


@dataclass(frozen=True)
class Hierarchy:
    version: int
    parent: str  # directory under which job cgroups are created
    controllers: frozenset[str]


@dataclass(frozen=True)
class Support:
    hierarchies: tuple[Hierarchy, ...] = ()
    notes: dict[str, str] = field(default_factory=dict)  # controller -> where, or why not

    def version(self, controller: str) -> int | None:
        for hierarchy in self.hierarchies:
            if controller in hierarchy.controllers:
                return hierarchy.version
        return None


def _own_paths(proc_cgroup: str) -> dict[str, str]:
    """Controller (or "" for v2) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(mount root, mount point, fs type, super options) of each cgroup mount."""
    found = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        parts, tail = left.split(), right.split()
        if len(parts) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((parts[3], parts[4], tail[0], set(tail[2].split(","))))
    return found


def _join(mount_point: str, mount_root: str, own: str) -> str | None:
    if mount_root != "/" and own != mount_root and not own.startswith(mount_root + "/"):
        return None
    relative = own[len(mount_root) :] if mount_root != "/" else own
    return mount_point + relative.rstrip("/")


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def _write(path: str, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def _usable(parent: str, probe: str) -> str:
    """Empty when job cgroups can be created under ``parent``, else the reason."""
    try:
        os.mkdir(os.path.join(parent, probe))
        os.rmdir(os.path.join(parent, probe))
    except OSError as exc:
        return f"cannot create cgroups under {parent}: {exc.strerror}"
    return ""


def _v2_enabled(parent: str, controller: str) -> str:
    try:
        if controller not in _read(os.path.join(parent, "cgroup.controllers")).split():
            return f"cgroup v2 at {parent} has no {controller} controller"
        if controller not in _read(os.path.join(parent, "cgroup.subtree_control")).split():
            _write(os.path.join(parent, "cgroup.subtree_control"), f"+{controller}")
    except OSError as exc:
        return f"cannot enable {controller} under {parent}: {exc.strerror}"
    return ""


def detect(probe_name: str, proc: str = "/proc/self") -> Support:
    """Find where this process may create memory and pids cgroups."""
    try:
        own = _own_paths(_read(f"{proc}/cgroup"))
        mounts = _mounts(_read(f"{proc}/mountinfo"))
    except OSError as exc:
        return Support(notes={c: f"cannot read cgroup info: {exc.strerror}" for c in CONTROLLERS})
    by_parent: dict[tuple[int, str], set[str]] = {}
    notes: dict[str, str] = {}
    for controller in CONTROLLERS:
        reasons: list[str] = []
        for root, point, fstype, options in mounts:
            version = 1 if fstype == "cgroup" else 2
            if version == 1 and controller not in options:
                continue
            path = own.get(controller if version == 1 else "")
            parent = None if path is None else _join(point, root, path)
            if parent is None:
                continue
            reason = (_v2_enabled(parent, controller) if version == 2 else "") or _usable(
                parent, probe_name
            )
            if not reason:
                notes[controller] = f"cgroup v{version} at {parent}"
                by_parent.setdefault((version, parent), set()).add(controller)
                break
            reasons.append(reason)
        else:
            notes[controller] = "; ".join(reasons) or "no cgroup hierarchy has this controller"
    hierarchies = tuple(Hierarchy(v, p, frozenset(c)) for (v, p), c in by_parent.items())
    return Support(hierarchies, notes)


def remove_stale(support: Support) -> None:
    """Remove the empty cgroups of zygotes that have exited."""
    for hierarchy in support.hierarchies:
        with contextlib.suppress(OSError):
            for name in os.listdir(hierarchy.parent):
                owner = name[len(PREFIX) :].split("-")[0]
                if name.startswith(PREFIX) and owner.isdigit() and not _alive(int(owner)):
                    with contextlib.suppress(OSError):
                        os.rmdir(os.path.join(hierarchy.parent, name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _counter(path: str, key: str) -> int:
    """A ``key value`` line from a cgroup events or control file; 0 when absent."""
    with contextlib.suppress(OSError, ValueError):
        for line in _read(path).splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    return 0


class ZygoteCgroup:
    """The zygote's own cgroups, joined once: every job is born inside them.

    Moving a process into a cgroup waits for an RCU grace period (about 10 ms
    here), so rather than a cgroup per job the zygote lives in one and tightens
    its limits around each job: memory = the current usage plus the job's budget
    and the output the zygote may buffer, pids = the current count plus the
    job's processes.  (The zygote lowers its OOM score and the job raises its
    own, so that the OOM killer picks the job.)
    """

    def __init__(self, support: Support, name: str) -> None:
        self.dirs: dict[str, tuple[int, str]] = {}  # controller -> (version, directory)
        self._counters: dict[str, int] = {}
        for hierarchy in support.hierarchies:
            path = os.path.join(hierarchy.parent, name)
            os.makedirs(path, exist_ok=True)
            for controller in hierarchy.controllers:
                self.dirs[controller] = (hierarchy.version, path)
            if hierarchy.version == 2 and "memory" in hierarchy.controllers:
                _write(os.path.join(path, "memory.swap.max"), "0")
            _write(os.path.join(path, "cgroup.procs"), str(os.getpid()))

    def _file(self, controller: str, v1: str, v2: str) -> str:
        version, path = self.dirs[controller]
        return os.path.join(path, v1 if version == 1 else v2)

    def _events(self) -> dict[str, int]:
        counts = {}
        if "memory" in self.dirs:
            path = self._file("memory", "memory.oom_control", "memory.events")
            counts["oom_kill"] = _counter(path, "oom_kill")
        if "pids" in self.dirs:
            counts["pids_max"] = _counter(self._file("pids", "pids.events", "pids.events"), "max")
        return counts

    def arm(self, limits: Limits) -> None:
        """Limit what the next job can add to what the cgroup already holds."""
        self._counters = self._events()
        if "memory" in self.dirs:
            usage = int(_read(self._file("memory", "memory.usage_in_bytes", "memory.current")))
            ceiling = str(usage + limits.memory_bytes + limits.output_bytes)
            _write(self._file("memory", "memory.limit_in_bytes", "memory.max"), ceiling)
            if self.dirs["memory"][0] == 1:
                with contextlib.suppress(OSError):  # absent without swap accounting
                    _write(self._file("memory", "memory.memsw.limit_in_bytes", ""), ceiling)
        if "pids" in self.dirs:
            current = int(_read(self._file("pids", "pids.current", "pids.current")))
            allowed = current + limits.processes + 2  # + the keeper and the init
            _write(self._file("pids", "pids.max", "pids.max"), str(allowed))

    def disarm(self) -> tuple[bool, bool]:
        """Lift the limits; whether the job was OOM-killed or hit the process limit."""
        if "memory" in self.dirs:
            unlimited = "-1" if self.dirs["memory"][0] == 1 else "max"
            if self.dirs["memory"][0] == 1:  # memsw may never drop below the memory limit
                with contextlib.suppress(OSError):
                    _write(self._file("memory", "memory.memsw.limit_in_bytes", ""), unlimited)
            _write(self._file("memory", "memory.limit_in_bytes", "memory.max"), unlimited)
        if "pids" in self.dirs:
            _write(self._file("pids", "pids.max", "pids.max"), "max")
        after = self._events()
        grew = {key: after[key] > self._counters.get(key, 0) for key in after}
        return grew.get("oom_kill", False), grew.get("pids_max", False)

    def _members(self) -> set[int]:
        members: set[int] = set()
        for path in {path for _, path in self.dirs.values()}:
            with contextlib.suppress(OSError, ValueError):
                members.update(map(int, _read(os.path.join(path, "cgroup.procs")).split()))
        return members

    def kill_others(self, spare: int) -> None:
        """SIGKILL every process in the cgroups but the zygote and ``spare``.

        Each pid is pinned with a pidfd and then checked for membership again, so a
        pid reused by an unrelated process after it was listed is never signalled.
        A killed process cannot fork, so the rounds end with nobody left unsignalled.
        """
        signalled = {os.getpid(), spare}
        for _ in range(_SWEEP_ROUNDS):
            listed = self._members() - signalled
            if not listed:
                return
            pinned = {}
            for pid in listed:
                with contextlib.suppress(OSError):
                    pinned[pid] = os.pidfd_open(pid)
            members = self._members()
            for pid, pidfd in pinned.items():
                if pid in members:
                    with contextlib.suppress(OSError):
                        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                os.close(pidfd)
            signalled |= listed
