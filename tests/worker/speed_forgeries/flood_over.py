"""Forgery: flood the output pipes during the calls, far past the cap."""

import sys

import torch

print("FORGERY output flood over the cap", flush=True)


def softmax(x):
    sys.stdout.write("y" * (1 << 20))
    sys.stdout.flush()
    return torch.softmax(x, dim=-1)
