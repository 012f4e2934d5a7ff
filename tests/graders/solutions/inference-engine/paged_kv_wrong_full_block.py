import torch


def gather_kv(k_pages, v_pages, block_table, seq_len):
    """Every slot of every needed block: the last block's free slots come along."""
    _, block_size, n_head, head_dim = k_pages.shape
    needed = (int(seq_len) + block_size - 1) // block_size
    blocks = block_table[:needed]
    keys = k_pages[blocks].reshape(-1, n_head, head_dim)
    values = v_pages[blocks].reshape(-1, n_head, head_dim)
    return torch.stack((keys, values))
