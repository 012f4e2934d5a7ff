"""The last steps in the job process before learner code: limits, identity, seccomp.

Order matters: limits are lowered while still privileged, the bounding set is
emptied while CAP_SETPCAP is held, the uid changes next (which also clears
the capability sets of a former root), and seccomp comes last because it
forbids some of the calls before it.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
from dataclasses import dataclass

from sandbox import linux
from sandbox.api import Limits, MiB
from sandbox.seccomp import Filter

STACK_BYTES = 8 * MiB
OPEN_FILES = 256
JOB_OOM_SCORE = 1000
MALLOC_ARENAS = 2  # so that threads do not spend the address-space budget on arenas


@dataclass(frozen=True)
class Identity:
    uid: int  # what the job runs as (inside its user namespace, if any)
    gid: int
    switch: bool  # True when the job starts as real root and must setresuid away


def _lower(kind: int, soft: int, hard: int) -> None:
    """Set a limit, never above the current hard limit (raising it needs privilege)."""
    current_hard = resource.getrlimit(kind)[1]
    if current_hard != resource.RLIM_INFINITY:
        hard = min(hard, current_hard)
    resource.setrlimit(kind, (min(soft, hard), hard))


def virtual_size() -> int:
    """Bytes of address space mapped right now (torch alone maps hundreds of MiB)."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def set_limits(limits: Limits, cuda: bool) -> None:
    if not cuda:  # the CUDA driver reserves huge address ranges; the cgroup limits it instead
        linux.limit_malloc_arenas(MALLOC_ARENAS)
        address_space = virtual_size() + limits.memory_bytes
        _lower(resource.RLIMIT_AS, address_space, address_space)
    cpu = max(1, math.ceil(limits.cpu_s))
    _lower(resource.RLIMIT_CPU, cpu, cpu + 1)
    _lower(resource.RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes)
    _lower(resource.RLIMIT_NOFILE, OPEN_FILES, OPEN_FILES)
    _lower(resource.RLIMIT_NPROC, limits.processes, limits.processes)
    _lower(resource.RLIMIT_CORE, 0, 0)
    _lower(resource.RLIMIT_STACK, STACK_BYTES, STACK_BYTES)


def drop_privileges(identity: Identity, cap_last: int) -> None:
    with contextlib.suppress(OSError):
        linux.prctl(linux.PR_CAP_AMBIENT, linux.PR_CAP_AMBIENT_CLEAR_ALL)
    for cap in range(cap_last + 1):
        try:
            linux.prctl(linux.PR_CAPBSET_DROP, cap)
        except OSError:  # no CAP_SETPCAP: an unprivileged job had nothing to drop
            break
    if identity.switch:
        os.setgroups([])
        os.setresgid(identity.gid, identity.gid, identity.gid)
        os.setresuid(identity.uid, identity.uid, identity.uid)
    linux.clear_capabilities()


def volunteer_for_oom() -> None:
    """Be the OOM killer's first choice, not the zygote (needs to run before the uid drop)."""
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as handle:
        handle.write(str(JOB_OOM_SCORE))


def apply(
    limits: Limits, identity: Identity, syscall_filter: Filter | None, cuda: bool, cap_last: int
) -> None:
    set_limits(limits, cuda)
    volunteer_for_oom()
    drop_privileges(identity, cap_last)
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    if syscall_filter is not None:
        syscall_filter.install()
