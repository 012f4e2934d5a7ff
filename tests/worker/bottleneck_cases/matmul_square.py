"""A speed reference for a known case of the bound rules: a 1024² float32 matmul, the shape
the worker's compute roof is measured on, so the library's own call sits near that roof."""

import torch

TOLERANCE = (1e-4, 1e-3)
N = 1024


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def inputs(generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    return (torch.randn(N, N, generator=generator), torch.randn(N, N, generator=generator))


def moved_bytes(a: torch.Tensor, b: torch.Tensor) -> int:
    """At least: read a and b, write the product."""
    return 3 * a.numel() * a.element_size()


def flops(a: torch.Tensor, b: torch.Tensor) -> int:
    """A multiply and an add per term of every dot product: 2 n³."""
    return 2 * a.shape[0] * a.shape[1] * b.shape[1]
