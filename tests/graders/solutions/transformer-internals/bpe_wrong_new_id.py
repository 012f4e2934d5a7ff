"""Writes max(ids) for the merged pair instead of a new id, max(ids) + 1."""

import itertools

import torch


def bpe_merge_step(ids):
    ids = ids.tolist()
    counts = {}
    for pair in itertools.pairwise(ids):
        counts[pair] = counts.get(pair, 0) + 1
    best = max(counts, key=counts.get)
    out = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == best:
            out.append(max(ids))
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return torch.tensor(out, dtype=torch.int64)
