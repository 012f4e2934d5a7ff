"""Forgery: burn the core from a thread (and a process, if one could start) so that the
reference's calls, which run on the same core, are slowed."""

import os
import threading

import torch

print("FORGERY reference-turn burner", flush=True)
try:
    if os.fork() == 0:
        while True:
            pass
except OSError as exc:
    print(f"fork refused: {exc.__class__.__name__}", flush=True)


def _burn():
    while True:
        pass


threading.Thread(target=_burn, daemon=True).start()


def softmax(x):
    return torch.softmax(x, dim=-1)
