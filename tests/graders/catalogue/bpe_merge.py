"""transformer-internals/bpe-merge-step: counting, tie-breaking and replacing slips."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

_REPLACE = """
def _replace(xs, best, new):
    out, i = [], 0
    while i < len(xs):
        if i + 1 < len(xs) and (xs[i], xs[i + 1]) == best:
            out.append(new)
            i += 2
        else:
            out.append(xs[i])
            i += 1
    return torch.tensor(out, dtype=torch.int64)
"""


def _choosing(body: str) -> str:
    """A submission that replaces correctly but picks ``best`` from ``xs`` by ``body``."""
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return f"""
import torch
{_REPLACE}
def bpe_merge_step(ids):
    xs = ids.tolist()
{lines}
    return _replace(xs, best, max(xs) + 1)
"""


_COUNTS = """
counts = {}
for p in zip(xs, xs[1:]):
    counts[p] = counts.get(p, 0) + 1
"""

CATALOGUE = Catalogue(
    grader="bpe_merge",
    task="transformer-internals/bpe-merge-step",
    reference=SOLUTIONS / "transformer-internals" / "bpe_correct.py",
    styles=(
        CorrectStyle(
            "Counter and first index",
            """
import collections

def bpe_merge_step(ids):
    xs = ids.tolist()
    pairs = list(zip(xs, xs[1:]))
    counts = collections.Counter(pairs)
    top = max(counts.values())
    best = next(p for p in pairs if counts[p] == top)
    out, i = [], 0
    while i < len(xs):
        if tuple(xs[i:i + 2]) == best:
            out.append(max(xs) + 1)
            i += 2
        else:
            out.append(xs[i])
            i += 1
    return torch.tensor(out)
""",
        ),
        CorrectStyle(
            "Counter.most_common keeps first-seen order on ties",
            _choosing(
                """
import collections
best = collections.Counter(zip(xs, xs[1:])).most_common(1)[0][0]
"""
            ),
        ),
        CorrectStyle(
            "count and first index per pair, sorted",
            _choosing(
                """
counts, first = {}, {}
for i, p in enumerate(zip(xs, xs[1:])):
    counts[p] = counts.get(p, 0) + 1
    first.setdefault(p, i)
best = sorted(counts, key=lambda p: (-counts[p], first[p]))[0]
"""
            ),
        ),
        CorrectStyle(
            "tensors: unique pairs with counts, first position of a top pair",
            """
def bpe_merge_step(ids):
    pairs = torch.stack((ids[:-1], ids[1:]), dim=1)
    _, inverse, counts = torch.unique(pairs, dim=0, return_inverse=True, return_counts=True)
    at = int((counts[inverse] == counts.max()).nonzero()[0, 0])
    a, b = pairs[at].tolist()
    new = int(ids.max()) + 1
    out, skip = [], False
    xs = ids.tolist()
    for i, x in enumerate(xs):
        if skip:
            skip = False
        elif i + 1 < len(xs) and x == a and xs[i + 1] == b:
            out.append(new)
            skip = True
        else:
            out.append(x)
    return torch.tensor(out, dtype=ids.dtype)
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "replaces overlapping occurrences",
            "bpe_merge_step",
            "move past both tokens",
            """
def bpe_merge_step(ids):
    xs = ids.tolist()
    counts = {}
    for p in zip(xs, xs[1:]):
        counts[p] = counts.get(p, 0) + 1
    best = max(counts, key=counts.get)
    out, i = [], 0
    while i < len(xs):
        if i + 1 < len(xs) and (xs[i], xs[i + 1]) == best:
            out.append(max(xs) + 1)
        else:
            out.append(xs[i])
        i += 1
    return torch.tensor(out)
""",
        ),
        CommonMistake(
            "counts only non-overlapping occurrences",
            "bpe_merge_step",
            "overlapping occurrences count",
            _choosing(
                """
def occurrences(pair):
    n = i = 0
    while i + 1 < len(xs):
        if (xs[i], xs[i + 1]) == pair:
            n, i = n + 1, i + 2
        else:
            i += 1
    return n
counts = {p: occurrences(p) for p in zip(xs, xs[1:])}
best = max(counts, key=counts.get)
"""
            ),
        ),
        CommonMistake(
            "counts the pairs at even positions only",
            "bpe_merge_step",
            "every position",
            _choosing(
                """
counts = {}
for p in zip(xs[::2], xs[1::2]):
    counts[p] = counts.get(p, 0) + 1
best = max(counts, key=counts.get)
"""
            ),
        ),
        CommonMistake(
            "ties to the smallest pair (sorting)",
            "bpe_merge_step",
            "numerically smallest pair",
            _choosing(_COUNTS + "best = sorted(counts, key=lambda p: (-counts[p], p))[0]"),
        ),
        CommonMistake(
            "ties to the largest pair",
            "bpe_merge_step",
            "numerically largest pair",
            _choosing(_COUNTS + "best = max(counts, key=lambda p: (counts[p], p))"),
        ),
        CommonMistake(
            "ties to the pair seen last (ascending sort, last element)",
            "bpe_merge_step",
            "the pair seen last",
            _choosing(_COUNTS + "best = sorted(counts, key=counts.get)[-1]"),
        ),
        CommonMistake(
            "new id is max(ids), not max(ids) + 1",
            "bpe_merge_step",
            "max(ids) + 1",
            """
def bpe_merge_step(ids):
    xs = ids.tolist()
    counts = {}
    for p in zip(xs, xs[1:]):
        counts[p] = counts.get(p, 0) + 1
    best = max(counts, key=counts.get)
    out, i = [], 0
    while i < len(xs):
        if i + 1 < len(xs) and (xs[i], xs[i + 1]) == best:
            out.append(max(xs))
            i += 2
        else:
            out.append(xs[i])
            i += 1
    return torch.tensor(out)
""",
        ),
    ),
)
