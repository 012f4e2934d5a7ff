import torch


def gather_kv(k_pages, v_pages, block_table, seq_len):
    """Token t is in block block_table[t // block_size], at slot t % block_size."""
    block_size = k_pages.shape[1]
    t = torch.arange(int(seq_len))
    blocks = block_table[t // block_size]
    slots = t % block_size
    return torch.stack((k_pages[blocks, slots], v_pages[blocks, slots]))
