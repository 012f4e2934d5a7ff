"""Which CPU core jobs run on, and what that CPU is called.

Every job is pinned to one core (``jail._job``, before learner code runs; seccomp then
refuses ``sched_setaffinity``), so a submission cannot spread its work over the host, and a
speed trial's reference and learner turns run on the same core under the same limits.  The
worker measures its roofline on that same core (``bot.worker.peaks``).
"""

from __future__ import annotations

import contextlib
import os


def job_core() -> int:
    """The highest-numbered CPU this process may run on: on a small host the scheduler tends
    to keep the worker and the zygote on the lower ones."""
    return max(os.sched_getaffinity(0))


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's marketing name ("AMD EPYC 7B13"), the device class of CPU speed boards."""
    with contextlib.suppress(OSError), open(cpuinfo, encoding="utf-8", errors="replace") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return " ".join(value.split())[:128]
    return f"{os.uname().machine} CPU"
