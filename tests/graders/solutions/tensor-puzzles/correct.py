"""Reference solution: every puzzle from arange, indexing, broadcasting and where."""

import torch


def outer(a, b):
    return a[:, None] * b[None, :]


def diag(a):
    i = torch.arange(a.shape[0])
    return a[i, i]


def triu(a):
    i = torch.arange(a.shape[0])
    return torch.where(i[None, :] >= i[:, None], a, 0)


def cumsum(a):
    i = torch.arange(a.shape[0])
    mask = i[None, :] <= i[:, None]  # mask[i, j]: j <= i
    return (mask * a[None, :]).sum(1)


def flip(a):
    n = a.shape[0]
    return a[n - 1 - torch.arange(n)]


def relu(a):
    return torch.where(a > 0, a, 0)
