"""Speed reference for tensor-puzzles/broadcasting-drills' cumsum: the puzzle's own method,
an n x n mask (j <= i) times the values, summed along a row.  torch.cumsum is forbidden there,
so the race is between legal tricks."""

import torch

TOLERANCE = (1e-4, 2e-3)


def reference(a: torch.Tensor) -> torch.Tensor:
    n = a.shape[0]
    positions = torch.arange(n)
    mask = positions[None, :] <= positions[:, None]
    return (a[None, :] * mask).sum(dim=1)


LENGTH = 2048


def inputs(generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    return (torch.randn(LENGTH, generator=generator),)


def moved_bytes(a: torch.Tensor) -> int:
    """At least: read the values once, write the sums once."""
    return 2 * a.numel() * a.element_size()


def flops(a: torch.Tensor) -> int:
    """At least n - 1 additions (a running sum), not the mask's n²."""
    return max(a.numel() - 1, 0)
