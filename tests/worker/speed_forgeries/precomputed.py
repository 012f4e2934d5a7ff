"""Forgery: an answer computed at import, before any input exists, returned at once."""

import torch

print("FORGERY precomputed answer", flush=True)
_READY = torch.softmax(torch.randn(2048, 1024), dim=-1)


def softmax(x):
    return _READY if x.shape == _READY.shape else torch.softmax(x, dim=-1)
