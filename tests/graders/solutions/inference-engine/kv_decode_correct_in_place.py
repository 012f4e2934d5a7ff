"""Correct as a serving engine does it: the new key and value written into slot pos of the
buffers, then attention over slots 0 … pos, with no copy of the cache."""

import math

import torch


def decode_step(x, k_cache, v_cache, pos, w_qkv, b_qkv, w_proj, b_proj, n_head):
    batch, width = x.shape
    heads, cached = int(n_head), int(pos)
    size = width // heads
    q, k, v = (x @ w_qkv + b_qkv).split(width, dim=-1)
    k_cache[:, :, cached] = k.reshape(batch, heads, size)
    v_cache[:, :, cached] = v.reshape(batch, heads, size)
    scores = q.reshape(batch, heads, 1, size) @ k_cache[:, :, : cached + 1].transpose(-2, -1)
    weights = torch.softmax(scores / math.sqrt(size), dim=-1)
    y = (weights @ v_cache[:, :, : cached + 1]).reshape(batch, width) @ w_proj + b_proj
    return torch.stack([y, k, v], dim=1)
