"""Attends over the whole buffer, masked beyond the new slot: the NaN in unfilled slots
still reaches y, since a weight of 0 times NaN is NaN."""

import math

import torch


def decode_step(x, k_cache, v_cache, pos, w_qkv, b_qkv, w_proj, b_proj, n_head):
    batch, width = x.shape
    heads, cached = int(n_head), int(pos)
    size = width // heads
    q, k, v = (x @ w_qkv + b_qkv).split(width, dim=-1)
    k_cache[:, :, cached] = k.reshape(batch, heads, size)
    v_cache[:, :, cached] = v.reshape(batch, heads, size)
    scores = q.reshape(batch, heads, 1, size) @ k_cache.transpose(-2, -1) / math.sqrt(size)
    later = torch.arange(k_cache.shape[2]) > cached
    weights = torch.softmax(scores.masked_fill(later, float("-inf")), dim=-1)
    y = (weights @ v_cache).reshape(batch, width) @ w_proj + b_proj
    return torch.stack([y, k, v], dim=1)
