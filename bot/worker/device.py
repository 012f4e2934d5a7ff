"""What this worker host can grade on: its CUDA GPU if it has one and may use it.

Lives with the worker because it may import torch; the bot only reads the answer, which
each worker advertises in its heartbeat (``bot.jobs.heartbeat``).
"""

from __future__ import annotations

import os

from bot.config import DeviceChoice
from bot.jobs.capabilities import MIB, Capabilities


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
