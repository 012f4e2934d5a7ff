"""What a job needs from a worker and what a worker has.

The bot process uses ``Requirements`` (from the quest's build task) and never
imports torch; workers detect theirs (``bot.worker.device``).  Matching happens in the
claim query itself, so a CPU-only worker never even sees a CUDA-only job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bot.content.schema import BuildTask

MIB = 1 << 20


@dataclass(frozen=True)
class Requirements:
    needs_cuda: bool = False
    min_gpu_memory_mib: int = 0

    @classmethod
    def of(cls, task: BuildTask) -> Requirements:
        needs = task.requires
        if needs is None:
            return cls()
        return cls(needs.cuda, math.ceil(needs.min_gpu_memory_gib * 1024))

    def describe(self) -> str:
        """``"a CUDA GPU with at least 16 GiB"``, for messages to members."""
        if not self.needs_cuda:
            return "a grading worker"
        if self.min_gpu_memory_mib:
            return f"a CUDA GPU with at least {self.min_gpu_memory_mib / 1024:g} GiB of memory"
        return "a CUDA GPU"


@dataclass(frozen=True)
class Capabilities:
    cuda: bool = False
    gpu_name: str | None = None
    gpu_memory_mib: int = 0

    def satisfies(self, needs: Requirements) -> bool:
        if not needs.needs_cuda:
            return True
        return self.cuda and self.gpu_memory_mib >= needs.min_gpu_memory_mib

    def describe(self) -> str:
        if not self.cuda:
            return "cpu"
        return f"cuda ({self.gpu_name}, {self.gpu_memory_mib / 1024:.0f} GiB)"


@dataclass(frozen=True)
class Peaks:
    """What one core of this host can do at best: the roofline of a speed trial."""

    cpu_model: str
    bandwidth_gbs: float  # 10⁹ bytes per second
    gflops: float  # 10⁹ float32 operations per second
    cache_gbs: float | None = None  # the triad over cache-resident arrays

    def describe(self) -> str:
        return (
            f"{self.bandwidth_gbs:.1f} GB/s memory bandwidth (STREAM triad), "
            f"{self.gflops:.0f} GFLOP/s float32 matmul, on 1 core of {self.cpu_model}"
        )
