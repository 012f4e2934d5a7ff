"""Forgery: return a buffer at once and let a thread fill it in after the call returned."""

import threading

import torch

print("FORGERY lazy result", flush=True)


def softmax(x):
    out = torch.empty_like(x)

    def fill():
        out.copy_(torch.softmax(x, dim=-1))

    threading.Thread(target=fill, daemon=True).start()
    return out
