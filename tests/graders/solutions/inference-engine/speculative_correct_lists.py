"""Plain Python on lists, one sequence at a time: slow, but 100,000 sequences still fit."""

import torch


def inverse_cdf(weights, u):
    """The smallest token t whose running total exceeds u times the whole total."""
    target, total = u * sum(weights), 0.0
    for t, w in enumerate(weights):
        total += w
        if total > target:
            return t
    raise ValueError("u * total is not below the total")


def speculative_accept(draft, q, p, u_accept, u_sample):
    k = draft.shape[1]
    rows = []
    for d, qb, pb, ua, us in zip(
        draft.tolist(), q.tolist(), p.tolist(), u_accept.tolist(), u_sample.tolist(), strict=True
    ):
        row = []
        for i in range(k):
            x = d[i]
            if ua[i] * qb[i][x] < pb[i][x]:
                row.append(x)
                continue
            weights = [max(0.0, a - b) for a, b in zip(pb[i], qb[i], strict=True)]
            break
        else:
            weights = pb[k]
        row.append(inverse_cdf(weights, us))
        rows.append(row + [-1] * (k + 1 - len(row)))
    return torch.tensor(rows, dtype=torch.int64)
