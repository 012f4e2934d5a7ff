"""inference-engine/paged-kv: block counts, table order, page layout and stacking slips."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

CATALOGUE = Catalogue(
    grader="paged_kv",
    task="inference-engine/paged-kv",
    reference=SOLUTIONS / "inference-engine" / "paged_kv_correct.py",
    styles=(
        CorrectStyle(
            "a loop over tokens into a new tensor of the pages' dtype",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    _, block_size, n_head, head_dim = k_pages.shape
    out = torch.empty(2, int(seq_len), n_head, head_dim, dtype=k_pages.dtype)
    for t in range(int(seq_len)):
        block = int(block_table[t // block_size])
        out[0, t] = k_pages[block, t % block_size]
        out[1, t] = v_pages[block, t % block_size]
    return out
""",
        ),
        CorrectStyle(
            "whole blocks, then the first seq_len rows",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    block_size, n_head, head_dim = k_pages.shape[1:]
    n = -(-int(seq_len) // block_size)
    blocks = block_table[:n]
    k = k_pages[blocks].reshape(-1, n_head, head_dim)[:seq_len]
    v = v_pages[blocks].reshape(-1, n_head, head_dim)[:seq_len]
    return torch.stack([k, v])
""",
        ),
        CorrectStyle(
            "a slot mapping into the flattened cache, with index_select",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    num_blocks, block_size = k_pages.shape[:2]
    positions = torch.arange(seq_len.item())
    slots = block_table[positions // block_size] * block_size + positions % block_size
    flat_k = k_pages.flatten(0, 1)
    flat_v = v_pages.flatten(0, 1)
    return torch.stack((flat_k.index_select(0, slots), flat_v.index_select(0, slots)))
""",
        ),
        CorrectStyle(
            "a loop over blocks in Python ints, the last one cut, concatenated",
            """
import math
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    length = int(seq_len)
    block_size = k_pages.size(1)
    table = block_table.tolist()
    keys, values = [], []
    for i in range(math.ceil(length / block_size)):
        used = min(block_size, length - i * block_size)
        keys.append(k_pages[table[i], :used])
        values.append(v_pages[table[i], :used])
    return torch.stack((torch.cat(keys), torch.cat(values)))
""",
        ),
        CorrectStyle(
            "keys and values stacked first, gathered together",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    block_size = k_pages.shape[1]
    n = (int(seq_len) + block_size - 1) // block_size
    both = torch.stack((k_pages, v_pages))
    return both[:, block_table[:n]].flatten(1, 2)[:, : int(seq_len)]
""",
        ),
        CorrectStyle(
            "computed in float64 and cast back",
            """
_correct = gather_kv

def gather_kv(k_pages, v_pages, block_table, seq_len):
    return _correct(k_pages.double(), v_pages.double(), block_table, seq_len).to(k_pages.dtype)
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "the last block read in full",
            "gather_kv",
            "every slot of the last block",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    block_size, n_head, head_dim = k_pages.shape[1:]
    blocks = block_table[: -(-int(seq_len) // block_size)]
    k = k_pages[blocks].reshape(-1, n_head, head_dim)
    v = v_pages[blocks].reshape(-1, n_head, head_dim)
    return torch.stack((k, v))
""",
        ),
        CommonMistake(
            "seq_len // block_size blocks: the partial block dropped",
            "gather_kv",
            "partly filled block is missing",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    block_size, n_head, head_dim = k_pages.shape[1:]
    blocks = block_table[: int(seq_len) // block_size]
    k = k_pages[blocks].reshape(-1, n_head, head_dim)[:seq_len]
    v = v_pages[blocks].reshape(-1, n_head, head_dim)[:seq_len]
    return torch.stack((k, v))
""",
        ),
        CommonMistake(
            "seq_len // block_size + 1 blocks: one too many",
            "gather_kv",
            "one block too many",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    block_size = k_pages.shape[1]
    keys, values = [], []
    for i in range(int(seq_len) // block_size + 1):
        keys.append(k_pages[block_table[i]])
        values.append(v_pages[block_table[i]])
    return torch.stack((torch.cat(keys), torch.cat(values)))
""",
        ),
        CommonMistake(
            "the block table sorted",
            "gather_kv",
            "increasing index order",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    block_size, n_head, head_dim = k_pages.shape[1:]
    blocks = sorted(block_table[: -(-int(seq_len) // block_size)].tolist())
    k = k_pages[blocks].reshape(-1, n_head, head_dim)[:seq_len]
    v = v_pages[blocks].reshape(-1, n_head, head_dim)[:seq_len]
    return torch.stack((k, v))
""",
        ),
        CommonMistake(
            "the cache read as one contiguous buffer",
            "gather_kv",
            "as if the cache were contiguous",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    n_head, head_dim = k_pages.shape[2:]
    k = k_pages.reshape(-1, n_head, head_dim)[:seq_len]
    v = v_pages.reshape(-1, n_head, head_dim)[:seq_len]
    return torch.stack((k, v))
""",
        ),
        CommonMistake(
            "keys and values swapped",
            "gather_kv",
            "keys and values are swapped",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    block_size = k_pages.shape[1]
    t = torch.arange(int(seq_len))
    blocks, slots = block_table[t // block_size], t % block_size
    return torch.stack((v_pages[blocks, slots], k_pages[blocks, slots]))
""",
        ),
        CommonMistake(
            "pages read as (block_size, num_blocks, ...)",
            "gather_kv",
            "(block_size, num_blocks, ...)",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    block_size = k_pages.shape[0]
    keys, values = [], []
    for t in range(int(seq_len)):
        block = block_table[t // block_size]
        keys.append(k_pages[t % block_size, block])
        values.append(v_pages[t % block_size, block])
    return torch.stack((torch.stack(keys), torch.stack(values)))
""",
        ),
        CommonMistake(
            "slot = block + offset, without * block_size",
            "gather_kv",
            "you left out the * block_size",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    block_size = k_pages.shape[1]
    t = torch.arange(int(seq_len))
    slots = block_table[t // block_size] + t % block_size
    return torch.stack((k_pages.flatten(0, 1)[slots], v_pages.flatten(0, 1)[slots]))
""",
        ),
        CommonMistake(
            "stacked on dim 1",
            "gather_kv",
            "stacked on dim 1",
            """
import torch

_correct = gather_kv

def gather_kv(k_pages, v_pages, block_table, seq_len):
    k = _correct(k_pages, v_pages, block_table, seq_len)[0]
    v = _correct(k_pages, v_pages, block_table, seq_len)[1]
    return torch.stack((k, v), dim=1)
""",
        ),
        CommonMistake(
            "concatenated instead of stacked",
            "gather_kv",
            "concatenated",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    block_size = k_pages.shape[1]
    t = torch.arange(int(seq_len))
    blocks, slots = block_table[t // block_size], t % block_size
    return torch.cat((k_pages[blocks, slots], v_pages[blocks, slots]))
""",
        ),
        CommonMistake(
            "a float32 result for float16 pages",
            "gather_kv",
            "float32 for float16 pages",
            """
import torch

def gather_kv(k_pages, v_pages, block_table, seq_len):
    _, block_size, n_head, head_dim = k_pages.shape
    out = torch.zeros(2, int(seq_len), n_head, head_dim)
    for t in range(int(seq_len)):
        block = block_table[t // block_size]
        out[0, t] = k_pages[block, t % block_size]
        out[1, t] = v_pages[block, t % block_size]
    return out
""",
        ),
    ),
)
