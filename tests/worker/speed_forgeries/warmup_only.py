"""Forgery: right on the first calls of a process (the untimed warm-ups), garbage after."""

import torch

print("FORGERY warm-up only", flush=True)
_CALLS = [0]


def softmax(x):
    _CALLS[0] += 1
    if _CALLS[0] <= 2:
        return torch.softmax(x, dim=-1)
    return torch.full_like(x, 1.0 / x.shape[-1])
