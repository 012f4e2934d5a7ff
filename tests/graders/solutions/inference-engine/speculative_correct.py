"""Reference solution: the whole batch at once, with a loop over the k draft positions."""

import torch


def sample(weights, u):
    """Per row, the smallest token t with cumsum(weights)[t] > u * sum(weights)."""
    c = weights.cumsum(dim=-1)
    return (c <= (u * c[:, -1]).unsqueeze(-1)).sum(dim=-1)


def speculative_accept(draft, q, p, u_accept, u_sample):
    batch, k = draft.shape
    rows = torch.arange(batch)
    out = torch.full((batch, k + 1), -1, dtype=torch.int64)
    running = torch.ones(batch, dtype=torch.bool)  # no rejection yet
    for i in range(k):
        x = draft[:, i]
        accept = u_accept[:, i] * q[rows, i, x] < p[rows, i, x]
        resampled = sample((p[:, i] - q[:, i]).clamp(min=0), u_sample)
        out[:, i] = torch.where(running, torch.where(accept, x, resampled), -1)
        running &= accept
    out[:, k] = torch.where(running, sample(p[:, k], u_sample), -1)
    return out
