"""Which CPU core jobs run on, and what that CPU is called.

A speed trial's jobs (its turns, ``JobOrder.pinned``) are pinned to the job core
(``jail._job``, before learner code runs), so its reference and learner turns run on the same
core under the same limits; a grading job is not pinned and runs on whatever CPUs the zygote
may use.  Seccomp refuses ``sched_setaffinity`` to every job, so none can change the CPUs it
was given.  The worker measures its roofline on the job core (``bot.worker.peaks``).
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
