"""Output during the learner's calls: a line per call, below the output cap."""

import torch

print("FORGERY output flood", flush=True)


def softmax(x):
    print("x" * 700, flush=True)
    return torch.softmax(x, dim=-1)
