"""The roofline a worker measures on its job core: memory bandwidth and float32 matmul speed.

A speed board compares a submission with what the host's one job core can do at best, so
every worker measures that once at start (``current``), on the core its jobs are pinned to
(``sandbox.cores.job_core``), with torch on one thread, as the jobs run.  It advertises
the result in its heartbeat, and ``brrrbot worker --check`` prints it.

- Bandwidth: a STREAM triad ``a = b + s*c`` over float32 arrays well beyond the last-level
  cache, counted as STREAM counts it (three arrays per pass, no write-allocate), best pass.
- Compute: a 1024×1024 float32 matmul (2n³ flops), best of a few.
- Cache bandwidth: the same triad over arrays small enough to stay in a core's own cache
  (``CACHE_ARRAY_BYTES``): the fastest any op can move bytes it has just been given, which is
  what the speed trials' physics floor needs (their inputs are written just before each call).

Only worker processes measure; the bot process imports this module (the heartbeat's types)
but never torch, which is imported inside the functions that measure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import logging
import math
import mmap
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bot.jobs.capabilities import Peaks
from sandbox.cores import cpu_model, job_core

log = logging.getLogger(__name__)

MIB = 1 << 20
#: each triad array is this many times the largest cache (STREAM's rule), within the bounds
CACHE_FACTOR = 4
MIN_ARRAY_BYTES = 32 * MIB
#: a cap that keeps a worker's start short (0.3 s here, against 2 s at 256 MiB): on this
#: machine, whose VM reports a 300 MiB L3, 32, 64 and 256 MiB arrays all measured 14 GB/s,
#: so the reported cache is not one a single core can hold data in
MAX_ARRAY_BYTES = 64 * MIB
FLOAT32_BYTES = 4
TRIAD_SCALAR = 3.0
MATMUL_N = 1024
#: each array of the cache triad: three of them fit a 1 MiB L2 with room to spare
CACHE_ARRAY_BYTES = 256 << 10
#: every kernel runs at least this many timed times after its warm-up, and at most
MIN_REPS, MAX_REPS = 3, 10
#: more timed runs only while a kernel's timed runs have taken less than this, in seconds
TRIAD_BUDGET_S, MATMUL_BUDGET_S = 0.1, 0.05
#: where the per-core lock files live that make measurements on one core take turns
LOCK_DIR = Path(tempfile.gettempdir())


def measure_peaks(core: int | None = None) -> Peaks:
    """Measure on ``core`` (default: the job core) with torch on one thread; the calling
    thread's affinity and torch's thread count are what they were when this returns.

    Takes about half a second on a small host, and maps three triad arrays (up to 768 MiB)
    for that long."""
    import torch  # noqa: F401  (now, not inside the timed section: importing takes seconds)

    core = job_core() if core is None else core
    array_bytes = triad_array_bytes(largest_cache_bytes(core))
    with _core_lock(core):
        started = time.perf_counter()
        with _one_thread_on(core):
            bandwidth_gbs = _triad_gbs(array_bytes)
            gflops = _matmul_gflops(MATMUL_N)
            cache_gbs = _triad_gbs(CACHE_ARRAY_BYTES, repeat=64)
        seconds = time.perf_counter() - started
    peaks = Peaks(cpu_model(), bandwidth_gbs, gflops, cache_gbs)
    log.info(
        "roofline measured on core %d in %.2f s (%d MiB arrays): %s",
        core,
        seconds,
        array_bytes // MIB,
        peaks.describe(),
    )
    return peaks


_lock = threading.Lock()
_measured: list[Peaks] = []


def current() -> Peaks:
    """This process's roofline: measured on the job core at the first call, then kept.

    Concurrent first calls measure once; a failed measurement raises and is tried again
    at the next call."""
    with _lock:
        if not _measured:
            _measured.append(measure_peaks())
        return _measured[0]


#: how long a terminal's remembered roofline stands before it is measured again
REMEMBERED_FOR_S = 7 * 24 * 3600


def remembered(path: Path) -> Peaks:
    """``current()`` for a terminal's ``brrrbot grade``: the roofline this host measured
    within a week (in ``path``, for this CPU model), else measured now and written there.
    A fresh process would otherwise spend most of a second and 200 MiB measuring it again
    for every speed-ranked grade.  A worker never uses this: it measures at start."""
    with _lock:
        if _measured:
            return _measured[0]
        found = _read_remembered(path)
        if found is None:
            found = measure_peaks()
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(dataclasses.asdict(found)))
        _measured.append(found)
        return found


def _read_remembered(path: Path) -> Peaks | None:
    try:
        if time.time() - path.stat().st_mtime > REMEMBERED_FOR_S:
            return None
        found = Peaks(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if found.cpu_model != cpu_model() or not (found.bandwidth_gbs > 0 and found.gflops > 0):
        return None
    return found


def largest_cache_bytes(core: int, cpus: Path = Path("/sys/devices/system/cpu")) -> int:
    """The size of the largest cache ``core`` sees (usually the L3), 0 when sysfs says none."""
    sizes = []
    for size_file in (cpus / f"cpu{core}" / "cache").glob("index*/size"):
        with contextlib.suppress(OSError, ValueError):
            sizes.append(parse_cache_size(size_file.read_text()))
    return max(sizes, default=0)


def parse_cache_size(text: str) -> int:
    """Bytes in a sysfs cache size: ``"48K"``, ``"2048K"``, ``"1M"``."""
    text = text.strip().upper()
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def triad_array_bytes(cache_bytes: int) -> int:
    """Each triad array: 4× the largest cache, within 32..256 MiB, whole MiB."""
    wanted = max(CACHE_FACTOR * cache_bytes, MIN_ARRAY_BYTES)
    return min(-(-wanted // MIB) * MIB, MAX_ARRAY_BYTES)


@contextlib.contextmanager
def _core_lock(core: int) -> Iterator[None]:
    """Take turns measuring on ``core`` with other processes: a pool's workers start at once,
    share the job core, and measuring together each would see half of it.  Where the lock
    file cannot be had, measure all the same."""
    fd = None
    with contextlib.suppress(OSError):
        fd = os.open(LOCK_DIR / f"brrrbot-roofline-cpu{core}.lock", os.O_RDONLY | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # and the lock with it


@contextlib.contextmanager
def _one_thread_on(core: int) -> Iterator[None]:
    """Pin the calling thread to ``core`` and torch to one thread (so torch computes on the
    calling thread), then restore both."""
    import torch

    affinity = os.sched_getaffinity(0)  # pid 0: on Linux, the calling thread
    threads = torch.get_num_threads()
    os.sched_setaffinity(0, {core})
    try:
        torch.set_num_threads(1)
        yield
    finally:
        torch.set_num_threads(threads)
        os.sched_setaffinity(0, affinity)


def _triad_gbs(array_bytes: int, repeat: int = 1) -> float:
    """Best triad bandwidth; ``repeat`` passes per timed run, for arrays so small that one
    pass is too short to time."""
    import torch

    # MAP_POPULATE first-touches every page for writing, faster than faulting them in one by
    # one: the arrays are real memory (not the shared zero page) from the start.  They stay
    # zero, which is as fast to add as any other values.  Unmapped when the tensors go.
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE
    a, b, c = (
        torch.frombuffer(mmap.mmap(-1, array_bytes, flags=flags), dtype=torch.float32)
        for _ in range(3)
    )

    def passes() -> None:
        for _ in range(repeat):
            torch.add(b, c, alpha=TRIAD_SCALAR, out=a)

    seconds = _best_seconds(passes, TRIAD_BUDGET_S)  # the warm-up pass writes ``a`` first
    return 3 * array_bytes * repeat / seconds / 1e9


def _matmul_gflops(n: int) -> float:
    import torch

    generator = torch.Generator().manual_seed(0)  # leaves the global generator alone
    x = torch.rand(n, n, generator=generator)
    y = torch.rand(n, n, generator=generator)
    out = torch.empty(n, n)
    seconds = _best_seconds(lambda: torch.mm(x, y, out=out), MATMUL_BUDGET_S)
    return 2 * n**3 / seconds / 1e9


def _best_seconds(kernel: Callable[[], object], budget_s: float) -> float:
    """The fastest of ``MIN_REPS`` or more timed runs of ``kernel``, after one warm-up run."""
    kernel()
    best, spent, reps = math.inf, 0.0, 0
    while reps < MIN_REPS or (reps < MAX_REPS and spent < budget_s):
        start = time.perf_counter()
        kernel()
        elapsed = time.perf_counter() - start
        best, spent, reps = min(best, elapsed), spent + elapsed, reps + 1
    return best
