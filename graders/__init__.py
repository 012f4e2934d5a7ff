"""Graders are code; quests name them.  The registry maps a name to what the bot needs to know
about a grader without importing it (the bot never imports torch): where its code is, the
functions it calls, its sandbox limits and whether it prefers a GPU.  Those facts are checked
against the graders themselves by ``tests/graders/test_registry.py``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sandbox.api import GiB, Limits, MiB

if TYPE_CHECKING:
    from graders.base import Grader

CASES = Limits(wall_s=10.0, cpu_s=10.0, memory_bytes=2 * GiB)


@dataclass(frozen=True)
class GraderInfo:
    target: str  # "module:attribute" of a zero-argument factory returning the Grader
    interface: tuple[str, ...]  # the functions it calls, in order
    limits: Limits = CASES
    prefers_cuda: bool = False  # grades on a GPU when the worker has one


REGISTRY: dict[str, GraderInfo] = {
    "matmul_three_ways": GraderInfo(
        "graders.matmul_three_ways:MatmulThreeWays",
        ("matmul_loops", "matmul_dot", "matmul_columns"),
    ),
    "tensor_puzzles": GraderInfo(
        "graders.tensor_puzzles:TensorPuzzles",
        ("outer", "diag", "triu", "cumsum", "flip", "relu"),
    ),
    "stable_softmax": GraderInfo("graders.stable_softmax:StableSoftmax", ("softmax",)),
    "attention": GraderInfo("graders.attention:Attention", ("attention", "causal_attention")),
    "bpe_merge": GraderInfo("graders.bpe_merge:BpeMerge", ("bpe_merge_step",)),
    "gpt2_block": GraderInfo(
        "graders.gpt2_block:Gpt2Block",
        ("layer_norm", "causal_self_attention", "mlp", "gpt2_block"),
    ),
    "mlp_backward": GraderInfo(
        "graders.mlp_backward:MlpBackward", ("grad_w2", "grad_b2", "grad_w1", "grad_b1")
    ),
    "lora_linear": GraderInfo("graders.lora_linear:LoraLinear", ("lora_linear", "merge_lora")),
    "fused_pointwise": GraderInfo(
        "graders.fused_pointwise:FusedPointwise",
        ("fused_gelu_bias",),
        Limits(wall_s=60.0, cpu_s=60.0, memory_bytes=2 * GiB, output_bytes=160 * MiB),
        prefers_cuda=True,
    ),
}


def grader_names() -> frozenset[str]:
    return frozenset(REGISTRY)


def load_grader(name: str) -> Grader:
    """Import and instantiate a grader (imports torch: worker processes only)."""
    try:
        target = REGISTRY[name].target
    except KeyError:
        raise KeyError(f"unknown grader {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
    module_name, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    return factory()
