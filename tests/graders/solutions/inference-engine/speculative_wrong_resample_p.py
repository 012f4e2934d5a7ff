"""At a rejection, samples from the target p instead of the residual max(0, p - q)."""

import torch


def sample(weights, u):
    c = weights.cumsum(dim=-1)
    return (c <= (u * c[:, -1]).unsqueeze(-1)).sum(dim=-1)


def speculative_accept(draft, q, p, u_accept, u_sample):
    batch, k = draft.shape
    rows = torch.arange(batch)
    out = torch.full((batch, k + 1), -1, dtype=torch.int64)
    running = torch.ones(batch, dtype=torch.bool)
    for i in range(k):
        x = draft[:, i]
        accept = u_accept[:, i] * q[rows, i, x] < p[rows, i, x]
        resampled = sample(p[:, i], u_sample)
        out[:, i] = torch.where(running, torch.where(accept, x, resampled), -1)
        running &= accept
    out[:, k] = torch.where(running, sample(p[:, k], u_sample), -1)
    return out
