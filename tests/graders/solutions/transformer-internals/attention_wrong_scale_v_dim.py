"""Scales the scores by the square root of the values' width instead of head_dim."""

import math

import torch


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])
    return torch.softmax(scores, dim=-1) @ v


def causal_attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])
    n = q.shape[-2]
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
