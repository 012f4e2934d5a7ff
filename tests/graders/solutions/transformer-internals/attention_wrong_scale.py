"""Forgets to divide the scores by sqrt(head_dim)."""

import torch


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1)
    return torch.softmax(scores, dim=-1) @ v


def causal_attention(q, k, v):
    scores = q @ k.transpose(-2, -1)
    n = q.shape[-2]
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
