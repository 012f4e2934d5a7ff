"""Grader for transformer-internals/bpe-merge-step: one step of byte-pair encoding training.

The rule, as the task states it: count every adjacent pair ``(ids[i], ids[i + 1])``
(overlapping pairs count, so ``[1, 1, 1]`` holds ``(1, 1)`` twice); take the most frequent,
breaking ties by the pair whose first occurrence starts earliest; replace its occurrences
left to right without overlap by ``ids.max() + 1``.  The reference below is plain Python,
and the usual slips (another tie rule, overlapping replacement) are diagnosed by name.
No library call does this step, so nothing is forbidden.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import torch

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.draws import draw_int

HINT = (
    "Count every adjacent pair (ids[i], ids[i + 1]), overlaps included; pick the most "
    "frequent, on a tie the one whose first occurrence starts earliest; then walk left to "
    "right, writing ids.max() + 1 for each occurrence and skipping past both of its tokens. "
    "Return a 1-D int64 tensor."
)
HINTS = {"bpe_merge_step": HINT}
PASSED_FEEDBACK = (
    "One merge, exactly as a byte-level BPE trainer does it. Training is this step in a "
    "loop: GPT-2's tokenizer is 256 byte tokens plus 50,000 such merges (and one special "
    "token). Encoding new text replays the learned merges in the order they were learned."
)

Pair = tuple[int, int]
TieRule = Callable[[dict[Pair, int]], Pair]


def pair_counts(ids: Sequence[int]) -> dict[Pair, int]:
    """Adjacent pairs with their counts, in order of first occurrence (dicts keep order)."""
    counts: dict[Pair, int] = {}
    for pair in itertools.pairwise(ids):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def first_most_frequent(counts: dict[Pair, int]) -> Pair:
    """``max`` returns the first maximal key, and the keys are in first-occurrence order."""
    return max(counts, key=counts.__getitem__)


def replace_pair(ids: Sequence[int], pair: Pair, new: int, *, overlap: bool = False) -> list[int]:
    """Every occurrence of ``pair`` becomes ``new``, left to right; ``overlap`` is the slip
    of stepping one token instead of two after a match (the second token survives too)."""
    out: list[int] = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new)
            i += 1 if overlap else 2
        else:
            out.append(ids[i])
            i += 1
    return out


def merge_step(
    ids: Sequence[int], choose: TieRule = first_most_frequent, *, overlap: bool = False
) -> list[int]:
    """The reference: one merge of the most frequent adjacent pair into ``max(ids) + 1``."""
    return replace_pair(ids, choose(pair_counts(ids)), max(ids) + 1, overlap=overlap)


def _smallest_on_tie(counts: dict[Pair, int]) -> Pair:
    return max(counts, key=lambda pair: (counts[pair], -pair[0], -pair[1]))


def _largest_on_tie(counts: dict[Pair, int]) -> Pair:
    return max(counts, key=lambda pair: (counts[pair], pair))


def _last_on_tie(counts: dict[Pair, int]) -> Pair:
    best = max(counts.values())
    return [pair for pair, n in counts.items() if n == best][-1]


_MISTAKES: dict[str, Callable[[list[int]], list[int]]] = {
    "on a tie you took the numerically smallest pair; the rule is the pair whose first "
    "occurrence starts earliest.": lambda ids: merge_step(ids, _smallest_on_tie),
    "on a tie you took the numerically largest pair; the rule is the pair whose first "
    "occurrence starts earliest.": lambda ids: merge_step(ids, _largest_on_tie),
    "on a tie you took the pair seen last; the rule is the pair whose first occurrence "
    "starts earliest.": lambda ids: merge_step(ids, _last_on_tie),
    "after writing the new id, move past both tokens of the pair; stepping by one keeps "
    "the pair's second token and lets occurrences overlap, so [1, 1, 1] came out "
    "[2, 2, 1] instead of [2, 1].": lambda ids: merge_step(ids, overlap=True),
}
#: crafted inputs: overlapping runs, ties that each tie rule settles differently, no repeats
CRAFTED: tuple[tuple[str, list[int]], ...] = (
    ("a run of three equal ids", [1, 1, 1]),
    ("a run of four equal ids", [1, 1, 1, 1]),
    ("five pairs tied", [4, 6, 9, 0, 1, 3, 4, 6, 9, 0, 1, 3]),
    ("two pairs tied, the smaller first", [1, 2, 3, 1, 2, 3]),
    ("every pair once", [5, 3, 8, 1]),
    ("just two ids", [4, 9]),
)


class BpeMerge(CaseGrader):
    name = "bpe_merge"
    interface: tuple[str, ...] = ("bpe_merge_step",)
    hints = HINTS
    passed_feedback = PASSED_FEEDBACK

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Crafted edge cases, then random corpora: 2..6 symbols, length 2..40."""
        corpora = list(CRAFTED)
        for _ in range(6):
            count = draw_int(gen, 2, 6)
            symbols = torch.randperm(20, generator=gen)[:count]
            length = draw_int(gen, 2, 40)
            picks = torch.randint(len(symbols), (length,), generator=gen)
            corpora.append((f"{length} ids over {len(symbols)} symbols", symbols[picks].tolist()))
        return [_case(label, ids) for label, ids in corpora]


def _case(what: str, ids: list[int]) -> Case:
    expected = merge_step(ids)
    mistakes = tuple(
        Mistake(torch.tensor(wrong(ids), dtype=torch.int64), why)
        for why, wrong in _MISTAKES.items()
        if wrong(ids) != expected
    )
    tensor = torch.tensor(ids, dtype=torch.int64)
    label = what if len(ids) > 12 else f"{what} {ids}"
    return Case(
        "bpe_merge_step",
        (tensor,),
        torch.tensor(expected, dtype=torch.int64),
        label,
        mistakes=mistakes,
    )
