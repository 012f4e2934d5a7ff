"""Every speed reference declares the least its op must move and compute, and those are lower
bounds a fused kernel could meet, never the reference's own (wasteful) cost."""

from __future__ import annotations

import math

import pytest
import torch

import graders.speed


@pytest.mark.parametrize("name", sorted(graders.speed.REFERENCES))
def test_a_reference_declares_lower_bounds_of_its_bytes_and_flops(name: str) -> None:
    module = graders.speed.load(name)
    inputs = module.inputs(torch.Generator().manual_seed(1))
    output = module.reference(*inputs)
    in_bytes = sum(t.numel() * t.element_size() for t in inputs)
    out_bytes = output.numel() * output.element_size()
    moved, flops = module.moved_bytes(*inputs), module.flops(*inputs)
    # a result must be written, and reading each input once and writing once is enough
    assert out_bytes <= moved <= in_bytes + out_bytes
    assert 0 < flops <= 64 * output.numel() * max(1, math.prod(inputs[0].shape[-1:]))


def test_cumsum_must_do_n_additions_not_the_masks_n_squared() -> None:
    module = graders.speed.load("cumsum_mask")
    (a,) = module.inputs(torch.Generator().manual_seed(1))
    assert module.flops(a) == a.numel() - 1 == 2047


def test_attention_must_do_its_two_products() -> None:
    module = graders.speed.load("attention_naive")
    q, k, v = module.inputs(torch.Generator().manual_seed(1))
    batch, heads, sequence, size = q.shape
    assert module.flops(q, k, v) == 2 * (2 * batch * heads * sequence * sequence * size)
