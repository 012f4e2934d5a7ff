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


def inputs(generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    return torch.randn(512, 1024, generator=generator), torch.randn(1024, generator=generator)


def moved_bytes(x: torch.Tensor, bias: torch.Tensor) -> int:
    return 2 * x.numel() * x.element_size() + bias.numel() * bias.element_size()
