"""Zeroes the future weights after the softmax, so each row no longer sums to 1."""

import math

import torch


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v


def causal_attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    n = q.shape[-2]
    keep = torch.ones(n, n).tril()
    return (torch.softmax(scores, dim=-1) * keep) @ v
