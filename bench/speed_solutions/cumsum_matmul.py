"""The mask as a matrix: one triangular matrix-vector product instead of a masked sum."""

import torch


def cumsum(a):
    n = a.shape[0]
    i = torch.arange(n)
    lower = (i[None, :] <= i[:, None]).to(a.dtype)
    return lower @ a
