"""Right answers from the library functions the puzzles ask you to rebuild."""

import torch


def outer(a, b):
    return torch.outer(a, b)


def diag(a):
    return torch.diagonal(a).clone()


def triu(a):
    return torch.triu(a)


def cumsum(a):
    return a.cumsum(0)


def flip(a):
    return torch.flip(a, (0,))


def relu(a):
    return a.clamp(min=0)
