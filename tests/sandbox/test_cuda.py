"""Grading on a CUDA GPU: only on a host that has one; skipped cleanly elsewhere.

``bench/gpu_check.sh`` runs these on a GPU machine.  The zygote asks NVML whether a GPU
exists and never initialises CUDA itself, so every forked job can; two jobs in a row
prove it (a job forked from a CUDA-initialised parent cannot use the GPU at all).
"""

from __future__ import annotations

import pytest
import torch

from sandbox.client import Zygote
from tests.sandbox.support import add_call, request, to_tensor

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ON_GPU = (
    "import torch\n"
    "def add(a, b):\n"
    "    assert a.device.type == 'cuda' and torch.cuda.is_initialized()\n"
    "    return a + b\n"
)


def test_jobs_run_on_the_gpu_one_after_another(sandbox: Zygote) -> None:
    for seed in (1, 2):
        call, expected = add_call(seed)
        result = sandbox.run(request(ON_GPU, (call,), device="cuda"))
        assert result.status == "ok", result.message + result.stderr
        assert result.device == "cuda"
        tensor = result.calls[0].tensor
        assert tensor is not None and torch.allclose(to_tensor(tensor), expected)
