"""What a job needs from a worker and what a worker has.

The bot process uses ``Requirements`` (from the quest's build task) and never
imports torch; ``detect`` runs only in worker processes.  Matching happens in the
claim query itself, so a CPU-only worker never even sees a CUDA-only job.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from bot.config import DeviceChoice
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


def detect(choice: DeviceChoice) -> Capabilities:
    """This host's grading capabilities; ``cpu`` opts out of a GPU that is present.

    Asks through NVML where torch can (``PYTORCH_NVML_BASED_CUDA_CHECK``), so merely
    looking does not initialise CUDA in this process.
    """
    if choice == "cpu":
        return Capabilities()
    import torch

    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    if torch.version.cuda is None or not torch.cuda.is_available():
        if choice == "cuda":
            raise RuntimeError("WORKER_DEVICE=cuda but this host has no usable CUDA GPU")
        return Capabilities()
    props = torch.cuda.get_device_properties(0)
    return Capabilities(True, str(props.name)[:128], int(props.total_memory // MIB))
