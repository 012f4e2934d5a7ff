"""Right values, returned as a tuple instead of one stacked tensor."""

import math

import torch


def decode_step(x, k_cache, v_cache, pos, w_qkv, b_qkv, w_proj, b_proj, n_head):
    batch, width = x.shape
    heads, cached = int(n_head), int(pos)
    size = width // heads
    q, k, v = (x @ w_qkv + b_qkv).split(width, dim=-1)
    keys = torch.cat([k_cache[:, :, :cached], k.reshape(batch, heads, 1, size)], dim=2)
    values = torch.cat([v_cache[:, :, :cached], v.reshape(batch, heads, 1, size)], dim=2)
    scores = q.reshape(batch, heads, 1, size) @ keys.transpose(-2, -1) / math.sqrt(size)
    y = (torch.softmax(scores, dim=-1) @ values).reshape(batch, width) @ w_proj + b_proj
    return y, k, v
