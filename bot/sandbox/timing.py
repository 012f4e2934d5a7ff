"""Timing a learner's function inside the job, the way GPU kernels should be timed.

On CUDA each sample is bracketed by CUDA events (host timers would measure launch
overhead, not the kernel) and preceded by overwriting a buffer twice the size of the
L2 cache, so every sample starts cold instead of reading the previous run's output
from cache.  On a CPU a plain ``perf_counter`` brackets each run.  Runs here, beside
learner code: the samples are reported for feedback and never decide a verdict alone.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter
from typing import Any

import torch

#: used when the device does not report its L2 size
DEFAULT_L2_BYTES = 64 << 20


def time_runs(
    function: Callable[..., Any], args: list[torch.Tensor], runs: int, device: str
) -> tuple[float, ...]:
    """Seconds per run of ``function(*args)``, ``runs`` times."""
    if runs <= 0:
        return ()
    if device == "cuda":
        return _cuda_samples(function, args, runs)
    samples = []
    for _ in range(runs):
        started = perf_counter()
        function(*args)
        samples.append(max(perf_counter() - started, 0.0))
    return tuple(samples)


def l2_flush_bytes() -> int:
    """Twice the L2 cache of the current GPU: enough to evict everything in it."""
    size = int(
        getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)
    )
    return 2 * (size or DEFAULT_L2_BYTES)


def _cuda_samples(
    function: Callable[..., Any], args: list[torch.Tensor], runs: int
) -> tuple[float, ...]:
    flush = torch.empty(l2_flush_bytes(), dtype=torch.uint8, device="cuda")
    pairs = []
    for _ in range(runs):
        flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        function(*args)
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    del flush
    return tuple(max(start.elapsed_time(end), 0.0) / 1000.0 for start, end in pairs)
