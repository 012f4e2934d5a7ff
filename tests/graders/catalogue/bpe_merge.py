"""transformer-internals/bpe-merge-step: counting, tie-breaking and replacing slips."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

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
    ),
)
