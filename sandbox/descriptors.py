"""File-descriptor hygiene for forked children: keep exactly what each one needs.

A forked child inherits every descriptor of the zygote (the client pipes, the
O_PATH handles of the root plan, other jobs' pipes); anything left open is a
way out of the sandbox, so children close by default and keep by name.
"""

from __future__ import annotations

import fcntl
import os
import resource
from collections.abc import Iterable

_CEILING = 1 << 20


def _max_fd() -> int:
    return min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], _CEILING)


def close_all_except(keep: Iterable[int]) -> None:
    low = 0
    for fd in sorted(set(keep)):
        if fd > low:
            os.closerange(low, fd)
        low = max(low, fd + 1)
    os.closerange(low, _max_fd())


def arrange(fds: list[int]) -> None:
    """Make ``fds[i]`` descriptor ``i`` (inheritable) and close every other descriptor."""
    copies = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, len(fds)) for fd in fds]
    for target, copy in enumerate(copies):
        os.dup2(copy, target, inheritable=True)
    os.closerange(len(fds), _max_fd())
