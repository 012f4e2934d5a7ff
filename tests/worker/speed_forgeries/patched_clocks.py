"""Forgery: freeze every clock a timing inside this process could read."""

import time

import torch

print("FORGERY patched clocks", flush=True)
time.perf_counter = lambda: 0.0
time.perf_counter_ns = lambda: 0
time.monotonic = lambda: 0.0
time.monotonic_ns = lambda: 0
time.time = lambda: 0.0


class _FrozenEvent:
    def __init__(self, *args, **kwargs):
        pass

    def record(self, *args, **kwargs):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 0.0


torch.cuda.Event = _FrozenEvent


def softmax(x):
    return torch.softmax(x, dim=-1)
