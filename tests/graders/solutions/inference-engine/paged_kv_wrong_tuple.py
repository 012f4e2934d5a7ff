import torch


def gather_kv(k_pages, v_pages, block_table, seq_len):
    """Right keys and values, returned as a pair instead of one stacked tensor."""
    block_size = k_pages.shape[1]
    t = torch.arange(int(seq_len))
    blocks, slots = block_table[t // block_size], t % block_size
    return k_pages[blocks, slots], v_pages[blocks, slots]
