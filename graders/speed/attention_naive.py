"""Speed reference for transformer-internals/attention-from-scratch: the textbook formula."""

import math

import torch

TOLERANCE = (1e-4, 1e-5)


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v


SHAPE = (2, 4, 512, 64)  # batch, heads, sequence, head size


def inputs(generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    return tuple(torch.randn(*SHAPE, generator=generator) for _ in range(3))


def moved_bytes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> int:
    """At least: read q, k and v once, write the result once (a fused kernel's traffic)."""
    return 4 * q.numel() * q.element_size()


def flops(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> int:
    """At least the two products, q kᵀ and the weights times v: 2·S·S·D each per head."""
    *heads, sequence, size = q.shape
    return 4 * math.prod(heads) * sequence * sequence * size
