"""Breaks ties by the smallest pair (sorting), not by the earliest first occurrence."""

import itertools

import torch


def bpe_merge_step(ids):
    ids = ids.tolist()
    counts = {}
    for pair in itertools.pairwise(ids):
        counts[pair] = counts.get(pair, 0) + 1
    best = sorted(counts, key=lambda p: (-counts[p], p))[0]
    new = max(ids) + 1
    out = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == best:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return torch.tensor(out, dtype=torch.int64)
