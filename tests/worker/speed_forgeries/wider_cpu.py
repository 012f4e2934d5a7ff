"""Forgery: ask for every CPU of the host and sixteen torch threads."""

import os

import torch

wanted = set(range(os.cpu_count() or 1))
print(f"FORGERY widen affinity from {sorted(os.sched_getaffinity(0))}", flush=True)
try:
    os.sched_setaffinity(0, wanted)
    print("affinity widened", flush=True)
except OSError as exc:
    print(f"affinity refused: {exc.__class__.__name__} errno {exc.errno}", flush=True)
torch.set_num_threads(16)
print(f"torch threads {torch.get_num_threads()}", flush=True)


def softmax(x):
    return torch.softmax(x, dim=-1)
