"""Forgery: threads (and a child process, if one could start) busy before and between calls."""

import os
import threading

import torch

print("FORGERY work ahead", flush=True)
_WARM = {}


def _spin():
    while True:  # "warms" the allocator and burns whatever core it is given
        _WARM["buffer"] = torch.empty(2048, 1024).fill_(1.0)


for _ in range(2):
    threading.Thread(target=_spin, daemon=True).start()
try:
    if os.fork() == 0:  # a helper process that would like to outlive the turn
        while True:
            pass
except OSError as exc:
    print(f"fork refused: {exc.__class__.__name__}", flush=True)


def softmax(x):
    return torch.softmax(x, dim=-1)
