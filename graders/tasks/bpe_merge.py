"""Grader for transformer-internals/bpe-merge-step: one step of byte-pair encoding training.

The rule, as the task states it: count every adjacent pair ``(ids[i], ids[i + 1])``
(overlapping pairs count, so ``[1, 1, 1]`` holds ``(1, 1)`` twice); take the most frequent,
breaking ties by the pair whose first occurrence starts earliest; replace its occurrences
left to right without overlap by ``ids.max() + 1``.  The reference below is plain Python,
and the usual slips (another counting or tie rule, overlapping replacement, the wrong new
id) are diagnosed by name; the fixed inputs are chosen so each of them fails.  No library
call does this step, so nothing is forbidden.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import torch

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.declaration import Declaration
from graders.draws import draw_int

DECLARATION = Declaration(
    functions=("bpe_merge_step(ids) -> Tensor",),
)

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
Counting = Callable[[Sequence[int]], dict[Pair, int]]
TieRule = Callable[[dict[Pair, int]], Pair]


def pair_counts(ids: Sequence[int]) -> dict[Pair, int]:
    """Adjacent pairs with their counts, in order of first occurrence (dicts keep order)."""
    counts: dict[Pair, int] = {}
    for pair in itertools.pairwise(ids):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def _disjoint_counts(ids: Sequence[int]) -> dict[Pair, int]:
    """The slip of counting each pair as often as it could be replaced (no overlaps)."""
    return {pair: len(ids) - len(replace_pair(ids, pair, -1)) for pair in pair_counts(ids)}


def _even_counts(ids: Sequence[int]) -> dict[Pair, int]:
    """The slip of cutting ``ids`` into pairs: only those starting at even positions."""
    counts: dict[Pair, int] = {}
    for pair in zip(ids[::2], ids[1::2], strict=False):
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
    ids: Sequence[int],
    choose: TieRule = first_most_frequent,
    *,
    count: Counting = pair_counts,
    overlap: bool = False,
    above_max: int = 1,
) -> list[int]:
    """The reference: one merge of the most frequent adjacent pair into ``max(ids) + 1``
    (the keywords are the slips: another count, overlapping replacement, another new id)."""
    return replace_pair(ids, choose(count(ids)), max(ids) + above_max, overlap=overlap)


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
    "you counted only occurrences that do not overlap; all overlapping occurrences count "
    "too, so [1, 1, 1] holds (1, 1) twice. Overlaps matter only when replacing.": (
        lambda ids: merge_step(ids, count=_disjoint_counts)
    ),
    "you counted only the pairs starting at even positions (ids[0:2], ids[2:4], ...); "
    "count the pair starting at every position i, (ids[i], ids[i + 1]).": (
        lambda ids: merge_step(ids, count=_even_counts)
    ),
    "the new id must be max(ids) + 1, one more than the largest id, so that it stands for "
    "the pair alone; you reused max(ids), a token that already means something.": (
        lambda ids: merge_step(ids, above_max=0)
    ),
}
#: crafted inputs, in every plan: overlapping runs, ties that each tie rule settles
#: differently, a run whose overlaps decide the count, a pair only at odd positions, no
#: repeats; each has at most 12 ids, so a failure shows it in full
CRAFTED: tuple[tuple[str, list[int]], ...] = (
    ("a run of three equal ids", [1, 1, 1]),
    ("a run of four equal ids", [1, 1, 1, 1]),
    ("five pairs tied", [4, 6, 9, 0, 1, 3, 4, 6, 9, 0, 1, 3]),
    ("two pairs tied, the smaller first", [1, 2, 3, 1, 2, 3]),
    ("a run's overlapping pairs tie with two repeated pairs", [9, 9, 9, 5, 6, 5, 6, 1, 2, 1, 2]),
    ("the most frequent pair at odd positions only", [5, 1, 2, 1, 2]),
    ("every pair once", [5, 3, 8, 1]),
    ("just two ids", [4, 9]),
)


class BpeMerge(CaseGrader):
    declaration = DECLARATION
    hints = HINTS
    passed_feedback = PASSED_FEEDBACK

    def fixed_cases(self, device: str) -> list[Case]:
        """The crafted inputs: each listed slip fails at least one of them."""
        return [_case(label, ids, drawn=False) for label, ids in CRAFTED]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Random corpora: 2..6 symbols, length 2..40."""
        cases = []
        for _ in range(6):
            count = draw_int(gen, 2, 6)
            symbols = torch.randperm(20, generator=gen)[:count]
            length = draw_int(gen, 2, 40)
            picks = torch.randint(len(symbols), (length,), generator=gen)
            label = f"{length} ids over {len(symbols)} symbols"
            cases.append(_case(label, symbols[picks].tolist()))
        return cases


def _case(label: str, ids: list[int], *, drawn: bool = True) -> Case:
    """The label names the input; the check's message shows the ids when they are few
    (at most 12) and otherwise the command that replays the plan's draw."""
    expected = merge_step(ids)
    mistakes = tuple(
        Mistake(torch.tensor(wrong(ids), dtype=torch.int64), why)
        for why, wrong in _MISTAKES.items()
        if wrong(ids) != expected
    )
    return Case(
        "bpe_merge_step",
        (torch.tensor(ids, dtype=torch.int64),),
        torch.tensor(expected, dtype=torch.int64),
        label,
        mistakes=mistakes,
        drawn=drawn,
    )
