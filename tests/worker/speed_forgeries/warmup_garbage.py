"""Forgery: skip the untimed warm-ups (garbage, or a huge tensor), right on the timed calls."""

import torch

print("FORGERY warm-up skipped", flush=True)
_CALLS = [0]


def softmax(x):
    _CALLS[0] += 1
    if _CALLS[0] == 1:
        return torch.zeros_like(x)
    if _CALLS[0] == 2:
        return torch.zeros(40 << 20)  # 160 MiB
    return torch.softmax(x, dim=-1)
