"""Random draws for graders' cases, from the seeded generator a plan is made with.

Sizes and values come only from that generator, so each job meets fresh inputs and one
seed replays a job exactly.
"""

from __future__ import annotations

import torch


def draw_int(gen: torch.Generator, low: int, high: int) -> int:
    """A uniform integer in ``low..high``, both ends included, unlike ``torch.randint``."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def draw_normal(
    gen: torch.Generator, *shape: int, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """Standard normal values, drawn in float64 and then rounded to ``dtype``.

    Drawing in float64 whatever ``dtype`` is means the case's dtype changes only the
    rounding of the values a seed gives, never the values themselves.
    """
    return torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
