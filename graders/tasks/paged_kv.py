"""Grader for inference-engine/paged-kv: one sequence's keys and values gathered from a
paged KV cache, laid out as vLLM's PagedAttention keeps it.

The cache is ``k_pages`` and ``v_pages``, each ``(num_blocks, block_size, n_head,
head_dim)``; a sequence owns the physical blocks its ``block_table`` lists, in its own
order, so token ``t`` sits in block ``block_table[t // block_size]`` at slot
``t % block_size``.  Only the first ``ceil(seq_len / block_size)`` entries of the table
mean anything: the rest are junk (-1, a block of another sequence, or an index past the
last block), and only the first ``seq_len - (n - 1) * block_size`` slots of the last
block hold this sequence's tokens.  ``gather_kv`` returns keys and values stacked,
``(2, seq_len, n_head, head_dim)`` in the pages' dtype.

A gather copies numbers, so the check is exact (no tolerance).  The fixed cases put the
usual slips on show whatever the seed: a partly filled last block, a sequence length that
is a multiple of the block size with a readable stale block right after the needed
entries (so one block too many returns numbers instead of raising), one shorter than a
block, two sequences sharing their first blocks (prefix caching), tables out of order and
never ``0, 1, 2, ...``, junk past the needed entries that is out of range (reading the
whole table raises there), and pages with as many blocks as slots per block, in float16
(a block and a slot index swapped then give wrong numbers, and a float32 result shows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import torch

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.declaration import Declaration
from graders.draws import draw_int, draw_normal
from graders.tensors import dtype_name

DECLARATION = Declaration(
    functions=("gather_kv(k_pages, v_pages, block_table, seq_len) -> Tensor",),
)

DTYPES = (torch.float32, torch.float16)
HINT = (
    "token t of the sequence is k_pages[block_table[t // block_size], t % block_size] (and "
    "the same in v_pages); the sequence uses the first ceil(seq_len / block_size) entries "
    "of block_table, in the table's order, and the entries after those are junk (-1, a "
    "block of another sequence, or past the last block), so never index with them. Return "
    "torch.stack((keys, values)), shape (2, seq_len, n_head, head_dim), in the pages' "
    "dtype; it must equal the gathered numbers exactly."
)
HINTS = {"gather_kv": HINT}
PASSED_FEEDBACK = (
    "Exact on every table. This gather is what PagedAttention does block by block inside "
    "its kernel, without ever building the contiguous copy: a sequence's cache grows one "
    "block at a time, at most one partly filled block of waste per sequence, and sequences "
    "with the same prompt prefix point at the same physical blocks instead of storing them "
    "twice."
)

#: the fixed cases' page values are drawn once from this seed, the same in every plan
_FIXED_SEED = 28


class PagedKv(CaseGrader):
    declaration = DECLARATION
    hints = HINTS
    passed_feedback = PASSED_FEEDBACK

    def fixed_cases(self, device: str) -> list[Case]:
        """The same in every plan, each slip failing at least one of them and the set
        naming it: A's partly filled last block (a full last block, seq_len // block_size
        blocks, the wrong stacking), B on A's pages sharing its first two blocks, a
        multiple of block_size with another sequence's block 3 right after the needed
        entries (one block too many returns numbers there, so it is told apart from a
        full last block), one shorter than a block (seq_len // block_size reads nothing),
        float16 pages with as many blocks as slots per block (pages[slot, block] still
        indexes and gives wrong numbers; a float32 result shows), and a multiple with 99
        right after (reading past the needed entries raises).  No table is sorted or
        0, 1, 2, ..., and every junk entry kind is there: -1, a live block, past the end."""
        gen = torch.Generator().manual_seed(_FIXED_SEED)
        fixed = partial(_case, drawn=False)
        shared = _pages(gen, 8, 4, 2, 3, torch.float32)
        multiple = _pages(gen, 7, 3, 1, 4, torch.float32)
        short = _pages(gen, 5, 8, 2, 2, torch.float32)
        square = _pages(gen, 6, 6, 2, 2, torch.float16)
        tight = _pages(gen, 9, 2, 1, 3, torch.float32)
        return [
            fixed(shared, [6, 1, 4, -1, -1], 10, "sequence A, the last block partly filled"),
            fixed(
                shared,
                [6, 1, 5, 2, 9],
                9,
                "sequence B on the same pages, sharing A's first blocks 6 and 1 (a common prefix)",
            ),
            fixed(multiple, [2, 5, 0, 3, -1, -1], 9, "seq_len a multiple of block_size"),
            fixed(short, [3, -1, -1], 5, "seq_len shorter than one block"),
            fixed(square, [4, 0, 5, 6, -1], 14, "as many blocks as slots per block"),
            fixed(
                tight, [8, 3, 7, 1, 99, -1], 8, "out-of-range junk right after the needed entries"
            ),
        ]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Random block sizes, heads and tables: any length, a multiple of the block size,
        shorter than a block, float16, and two sequences sharing a prefix."""
        cases = [
            _drawn(gen, torch.float32, "a drawn sequence"),
            _drawn(gen, torch.float32, "seq_len a multiple of block_size", fill="multiple"),
            _drawn(gen, torch.float32, "seq_len shorter than one block", fill="short"),
            _drawn(gen, torch.float16, "a drawn sequence"),
        ]
        return cases + _shared_pair(gen)


@dataclass(frozen=True)
class Pages:
    """A paged cache: the key and value pages, (num_blocks, block_size, n_head, head_dim)."""

    k: torch.Tensor
    v: torch.Tensor

    @property
    def num_blocks(self) -> int:
        return self.k.shape[0]

    @property
    def block_size(self) -> int:
        return self.k.shape[1]


def _pages(
    gen: torch.Generator,
    num_blocks: int,
    block_size: int,
    n_head: int,
    head_dim: int,
    dtype: torch.dtype,
) -> Pages:
    shape = (num_blocks, block_size, n_head, head_dim)
    return Pages(draw_normal(gen, *shape, dtype=dtype), draw_normal(gen, *shape, dtype=dtype))


def _blocks_needed(seq_len: int, block_size: int) -> int:
    return -(-seq_len // block_size)


def _draw_seq_len(gen: torch.Generator, block_size: int, fill: str) -> int:
    if fill == "multiple":
        return block_size * draw_int(gen, 1, 4)
    if fill == "short":
        return draw_int(gen, 1, block_size - 1)
    return draw_int(gen, 1, 5 * block_size)


def _junk(gen: torch.Generator, num_blocks: int, count: int) -> list[int]:
    """Entries past the needed ones: -1, a block of some other sequence, or past the end."""
    kinds = (-1, draw_int(gen, 0, num_blocks - 1), num_blocks + draw_int(gen, 0, 50))
    return [kinds[draw_int(gen, 0, 2)] for _ in range(count)]


def _table(gen: torch.Generator, pool: Sequence[int], needed: int, junk: Sequence[int]) -> list:
    """``needed`` distinct blocks of ``pool`` in random order, then the junk."""
    order = torch.randperm(len(pool), generator=gen)[:needed].tolist()
    return [pool[i] for i in order] + list(junk)


def _drawn(gen: torch.Generator, dtype: torch.dtype, what: str, *, fill: str = "any") -> Case:
    block_size = draw_int(gen, 2, 8)
    seq_len = _draw_seq_len(gen, block_size, fill)
    needed = _blocks_needed(seq_len, block_size)
    num_blocks = needed + draw_int(gen, 1, 6)
    pages = _pages(gen, num_blocks, block_size, draw_int(gen, 1, 3), draw_int(gen, 2, 6), dtype)
    junk = _junk(gen, num_blocks, draw_int(gen, 1, 3))
    return _case(pages, _table(gen, range(num_blocks), needed, junk), seq_len, what)


def _shared_pair(gen: torch.Generator) -> list[Case]:
    """Two sequences on the same pages whose tables start with the same blocks."""
    block_size = draw_int(gen, 2, 6)
    common = draw_int(gen, 1, 3)
    lengths = [common * block_size + draw_int(gen, 1, 3 * block_size) for _ in range(2)]
    own = [_blocks_needed(n, block_size) - common for n in lengths]
    num_blocks = common + sum(own) + draw_int(gen, 0, 3)
    pages = _pages(
        gen, num_blocks, block_size, draw_int(gen, 1, 3), draw_int(gen, 2, 6), torch.float32
    )
    shuffled = torch.randperm(num_blocks, generator=gen).tolist()
    prefix, rest = shuffled[:common], shuffled[common:]
    tables = [prefix + rest[: own[0]], prefix + rest[own[0] : own[0] + own[1]]]
    cases = []
    for name, table, seq_len in zip("AB", tables, lengths, strict=True):
        junk = _junk(gen, num_blocks, draw_int(gen, 1, 2))
        what = f"sequence {name} of two sharing their first {common} block(s)"
        cases.append(_case(pages, table + junk, seq_len, what))
    return cases


def _case(
    pages: Pages, table: Sequence[int], seq_len: int, what: str, *, drawn: bool = True
) -> Case:
    block_table = torch.tensor(table, dtype=torch.int64)
    length = torch.tensor(seq_len, dtype=torch.int64)
    block_size = pages.block_size
    needed = _blocks_needed(seq_len, block_size)
    used = seq_len - (needed - 1) * block_size
    shape = tuple(pages.k.shape)
    label = (
        f"{what}: pages {shape} {dtype_name(pages.k.dtype)}, block_table {list(table)}, "
        f"seq_len {seq_len} ({needed} block(s), the last holding {used} of {block_size})"
    )
    return Case(
        "gather_kv",
        (pages.k, pages.v, block_table, length),
        _gather(pages, table, seq_len),
        label,
        rtol=0.0,
        atol=0.0,
        mistakes=_mistakes(pages, block_table, seq_len),
        drawn=drawn,
    )


def _gather(pages: Pages, table: Sequence[int], seq_len: int) -> torch.Tensor:
    """The reference: whole blocks in the table's order, the last cut to what it holds."""
    block_size = pages.block_size
    parts = []
    for i in range(_blocks_needed(seq_len, block_size)):
        used = min(block_size, seq_len - i * block_size)
        parts.append(torch.stack((pages.k[table[i], :used], pages.v[table[i], :used])))
    return torch.cat(parts, dim=1)


# -- the usual slips, each as the learner would compute it (IndexError where it would raise)


def _by_slots(pages: Pages, blocks: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    return torch.stack((pages.k[blocks, offsets], pages.v[blocks, offsets]))


def _whole_blocks(pages: Pages, table: torch.Tensor, count: int) -> torch.Tensor:
    """The first ``count`` blocks of the table, every slot of each."""
    blocks = table[:count]
    return torch.stack((pages.k[blocks], pages.v[blocks])).flatten(1, 2)


def _positions(seq_len: int) -> torch.Tensor:
    return torch.arange(seq_len)


def _right(pages: Pages, table: torch.Tensor, seq_len: int) -> torch.Tensor:
    t = _positions(seq_len)
    return _by_slots(pages, table[t // pages.block_size], t % pages.block_size)


def _sorted_table(pages: Pages, table: torch.Tensor, seq_len: int) -> torch.Tensor:
    needed = _blocks_needed(seq_len, pages.block_size)
    in_order = torch.cat((table[:needed].sort().values, table[needed:]))
    return _right(pages, in_order, seq_len)


def _contiguous(pages: Pages, table: torch.Tensor, seq_len: int) -> torch.Tensor:
    return _right(pages, torch.arange(len(table)), seq_len)


def _pages_transposed(pages: Pages, table: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Pages read as (block_size, num_blocks, ...): block_size taken from dim 0, and the
    slot indexed before the block."""
    t, block_size = _positions(seq_len), pages.num_blocks
    blocks = table[t // block_size]
    offsets = t % block_size
    return torch.stack((pages.k[offsets, blocks], pages.v[offsets, blocks]))


def _slot_without_block_size(pages: Pages, table: torch.Tensor, seq_len: int) -> torch.Tensor:
    t, (num_blocks, block_size, n_head, head_dim) = _positions(seq_len), pages.k.shape
    slots = table[t // block_size] + t % block_size
    flat = (num_blocks * block_size, n_head, head_dim)
    return torch.stack((pages.k.reshape(flat)[slots], pages.v.reshape(flat)[slots]))


_Slip = Callable[[Pages, torch.Tensor, int], torch.Tensor]
#: explanation -> the slip; the first that explains every failing case is named, so a slip
#: that agrees with an earlier one on some cases comes after it
_MISTAKES: dict[str, _Slip] = {
    "you returned every slot of the last block: only the first seq_len - (n - 1) * "
    "block_size slots of the sequence's last block hold its tokens (the rest are free or "
    "stale); keep the first seq_len positions.": (
        lambda p, table, n: _whole_blocks(p, table, _blocks_needed(n, p.block_size))
    ),
    "the last, partly filled block is missing: the sequence spans ceil(seq_len / "
    "block_size) blocks (-(-seq_len // block_size)), not seq_len // block_size.": (
        lambda p, table, n: _whole_blocks(p, table, n // p.block_size)
    ),
    "you read one block too many: seq_len // block_size + 1 blocks is one past the end when "
    "seq_len is a multiple of block_size. The sequence spans ceil(seq_len / block_size) "
    "blocks, and the table's entries after those are junk.": (
        lambda p, table, n: _whole_blocks(p, table, n // p.block_size + 1)
    ),
    "your blocks are in increasing index order: the table lists the sequence's blocks in "
    "its own order (block_table[i] holds tokens i * block_size onwards), so do not sort "
    "it.": _sorted_table,
    "you read physical blocks 0, 1, 2, ... as if the cache were contiguous: the sequence's "
    "i-th block is physical block block_table[i].": _contiguous,
    "keys and values are swapped: out[0] holds the keys (from k_pages), out[1] the "
    "values.": lambda p, table, n: _right(p, table, n).flip(0),
    "you read the pages as (block_size, num_blocks, ...): they are (num_blocks, "
    "block_size, n_head, head_dim), so the block index comes first, "
    "k_pages[block_table[t // block_size], t % block_size], with block_size = "
    "k_pages.shape[1].": _pages_transposed,
    "the slot of token t in the flattened cache (num_blocks * block_size rows) is "
    "block_table[t // block_size] * block_size + t % block_size; you left out the "
    "* block_size.": _slot_without_block_size,
    "keys and values are stacked on dim 1, giving (seq_len, 2, n_head, head_dim); stack "
    "them on dim 0: (2, seq_len, n_head, head_dim).": (
        lambda p, table, n: _right(p, table, n).transpose(0, 1)
    ),
    "keys and values are concatenated, (2 * seq_len, n_head, head_dim); stack them "
    "instead, torch.stack((keys, values)): (2, seq_len, n_head, head_dim).": (
        lambda p, table, n: _right(p, table, n).flatten(0, 1)
    ),
}
#: the slip of filling a new tensor made without a dtype (torch.zeros and torch.empty
#: default to float32)
_RETURNS_FLOAT32 = (
    "the numbers are right but your result is float32 for float16 pages: a gather copies, "
    "so return the pages' dtype (torch.zeros and torch.empty make float32 unless given "
    "dtype=k_pages.dtype)."
)


def _mistakes(pages: Pages, table: torch.Tensor, seq_len: int) -> tuple[Mistake, ...]:
    """Each listed slip's result for this case, where it returns one at all."""
    found = []
    if pages.k.dtype != torch.float32:
        found.append(Mistake(_right(pages, table, seq_len).float(), _RETURNS_FLOAT32))
    for why, slip in _MISTAKES.items():
        try:
            found.append(Mistake(slip(pages, table, seq_len), why))
        except IndexError:  # the slip reads junk past the cache here: it is seen raising
            continue
    return tuple(found)
