"""Correct but slow attention: one query row at a time in Python."""

import math

import torch


def attention(q, k, v):
    out = torch.empty(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    scale = 1 / math.sqrt(q.shape[-1])
    for i in range(q.shape[-2]):
        scores = (q[..., i : i + 1, :] @ k.transpose(-2, -1)) * scale
        out[..., i : i + 1, :] = torch.softmax(scores, dim=-1) @ v
    return out
