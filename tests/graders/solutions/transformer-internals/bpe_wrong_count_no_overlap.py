"""Counts each pair only as often as it could be replaced, so overlaps in a run do not count."""

import itertools

import torch


def _occurrences(ids, pair):
    n = i = 0
    while i + 1 < len(ids):
        if (ids[i], ids[i + 1]) == pair:
            n, i = n + 1, i + 2
        else:
            i += 1
    return n


def bpe_merge_step(ids):
    ids = ids.tolist()
    counts = {pair: _occurrences(ids, pair) for pair in itertools.pairwise(ids)}
    best = max(counts, key=counts.get)
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
