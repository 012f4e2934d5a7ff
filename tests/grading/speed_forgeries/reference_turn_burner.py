"""Forgery: leave a process behind that burns the core while the reference has its turn."""

import os
import time

import torch

print("FORGERY reference-turn burner", flush=True)
if os.fork() == 0:
    try:
        os.setsid()  # leave the job's session, if allowed
    except OSError as exc:
        print(f"setsid refused: {exc.__class__.__name__}", flush=True)
    if os.fork() == 0:  # orphan a grandchild, as a daemon would
        end = time.monotonic() + 30
        while time.monotonic() < end:
            pass
    os._exit(0)


def softmax(x):
    return torch.softmax(x, dim=-1)
