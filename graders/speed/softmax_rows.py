"""Speed reference for transformer-internals/stable-softmax: the library softmax."""

import torch

TOLERANCE = (2e-4, 1e-6)


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


ROWS, COLUMNS = 2048, 1024


def inputs(generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    return (torch.randn(ROWS, COLUMNS, generator=generator) * 4,)


def moved_bytes(x: torch.Tensor) -> int:
    """At least: read x once, write the result once."""
    return 2 * x.numel() * x.element_size()


def flops(x: torch.Tensor) -> int:
    """At least: per element a subtraction, an exponential, an addition and a division."""
    return 4 * x.numel()
