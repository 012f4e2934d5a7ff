"""Forgery: right on the first call of a process (what a grader checks), garbage after."""

import torch

print("FORGERY call counter", flush=True)
_CALLS = [0]


def softmax(x):
    _CALLS[0] += 1
    if _CALLS[0] == 1:
        return torch.softmax(x, dim=-1)
    return torch.full_like(x, 1.0 / x.shape[-1])
