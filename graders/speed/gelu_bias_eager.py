"""Speed reference for roofline/fused-gelu: the tanh GELU of x + bias as separate eager ops.

Every op reads and writes the whole tensor, which is what fusing saves; the roofline reading
counts only the bytes the chain must move (read x and bias, write the result).
"""

import math

import torch

TOLERANCE = (1e-4, 1e-5)
SCALE = math.sqrt(2.0 / math.pi)


def reference(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    h = x + bias
    return 0.5 * h * (1.0 + torch.tanh(SCALE * (h + 0.044715 * h.pow(3))))


ROWS, COLUMNS = 1024, 1024


def inputs(generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    x = torch.randn(ROWS, COLUMNS, generator=generator)
    return x, torch.randn(COLUMNS, generator=generator)


def moved_bytes(x: torch.Tensor, bias: torch.Tensor) -> int:
    """At least: read x and bias once, write the result once."""
    return 2 * x.numel() * x.element_size() + bias.numel() * bias.element_size()


def flops(x: torch.Tensor, bias: torch.Tensor) -> int:
    """At least six per element: the bias, h², h³, the inner sum, the tanh, the product."""
    return 6 * x.numel()
