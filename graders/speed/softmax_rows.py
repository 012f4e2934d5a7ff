"""Speed reference for transformer-internals/stable-softmax: the library softmax."""

import torch

TOLERANCE = (2e-4, 1e-6)


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def inputs(generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    return (torch.randn(256, 1024, generator=generator) * 4,)
