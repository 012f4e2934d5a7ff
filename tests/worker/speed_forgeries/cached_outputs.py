"""Forgery: remember every answer under a cheap fingerprint of its input (32 sampled values)
and replay it when the same input comes again: cheaper than the softmax, so it would win at
once if any input were ever repeated."""

import torch

print("FORGERY output cache", flush=True)
_MEMORY = {}


def _key(x):
    return x.reshape(-1)[:: max(1, x.numel() // 32)].numpy().tobytes()


def softmax(x):
    key = _key(x)
    hit = _MEMORY.get(key)
    if hit is not None:
        print("FORGERY cache hit", flush=True)
        return hit
    result = torch.softmax(x, dim=-1)
    _MEMORY[key] = result
    return result
