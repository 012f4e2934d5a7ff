"""Graders are code; quests name them.  The registry maps a name to its module
path so that the bot (which never imports torch) can validate quest files
without importing any grader.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graders.base import Grader

#: grader name -> "module:attribute" of a zero-argument factory returning a Grader
REGISTRY: dict[str, str] = {
    "matmul_three_ways": "graders.matmul_three_ways:MatmulThreeWays",
    "tensor_puzzles": "graders.tensor_puzzles:TensorPuzzles",
    "stable_softmax": "graders.stable_softmax:StableSoftmax",
    "attention": "graders.attention:Attention",
    "bpe_merge": "graders.bpe_merge:BpeMerge",
    "gpt2_block": "graders.gpt2_block:Gpt2Block",
    "mlp_backward": "graders.mlp_backward:MlpBackward",
    "lora_linear": "graders.lora_linear:LoraLinear",
    "fused_pointwise": "graders.fused_pointwise:FusedPointwise",
}


def grader_names() -> frozenset[str]:
    return frozenset(REGISTRY)


def load_grader(name: str) -> Grader:
    """Import and instantiate a grader (imports torch: worker processes only)."""
    try:
        target = REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown grader {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
    module_name, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    return factory()
