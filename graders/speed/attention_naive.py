"""Speed reference for transformer-internals/attention-from-scratch: the textbook formula."""

import math

import torch

TOLERANCE = (1e-4, 1e-5)


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v


def inputs(generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    return tuple(torch.randn(2, 4, 256, 64, generator=generator) for _ in range(3))
