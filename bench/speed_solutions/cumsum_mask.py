"""The puzzle's own broadcasting cumsum: the honest equivalent of the reference."""

import torch


def cumsum(a):
    i = torch.arange(a.shape[0])
    return (a[None, :] * (i[None, :] <= i[:, None])).sum(dim=1)
