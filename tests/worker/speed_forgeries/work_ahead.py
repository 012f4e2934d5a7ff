"""Forgery: a thread (and a child process, if one could start) busy before and between calls.

The thread fills a buffer it allocated once, so it burns whatever core it is given (torch
lets go of the GIL while it fills) without taking the learner's own call hostage: the trick
is the work done beside the reference's turn, which the frozen job cannot do."""

import os
import threading

import torch

print("FORGERY work ahead", flush=True)
_WARM = torch.empty(2048, 1024)


def _spin():
    while True:  # "warms" the cache and burns the core
        _WARM.fill_(1.0)


threading.Thread(target=_spin, daemon=True).start()
try:
    if os.fork() == 0:  # a helper process that would like to outlive the turn
        while True:
            pass
except OSError as exc:
    print(f"fork refused: {exc.__class__.__name__}", flush=True)


def softmax(x):
    return torch.softmax(x, dim=-1)
