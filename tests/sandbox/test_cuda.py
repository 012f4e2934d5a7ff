"""Grading on a CUDA GPU: only on a host that has one; skipped cleanly elsewhere.

``bench/gpu_check.sh`` runs these on a GPU machine.  The zygote asks NVML whether a GPU
exists and never initialises CUDA itself, so every forked job can; two jobs in a row
prove it (a job forked from a CUDA-initialised parent cannot use the GPU at all).
"""

from __future__ import annotations

import pytest
import torch

from bot.sandbox.api import Call
from bot.sandbox.client import Zygote
from bot.sandbox.timing import l2_flush_bytes
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


def test_timed_runs_use_cuda_events(sandbox: Zygote) -> None:
    base, _ = add_call(3)
    call = Call(base.function, base.args, base.label, timed_runs=5)
    result = sandbox.run(request(ON_GPU, (call,), device="cuda"))
    assert result.status == "ok", result.stderr
    samples = result.calls[0].samples_s
    assert len(samples) == 5 and all(0 < s < 0.1 for s in samples)


def test_the_l2_flush_covers_the_cache() -> None:
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    assert l2 > 0 and l2_flush_bytes() >= 2 * l2
