import torch


def gather_kv(k_pages, v_pages, block_table, seq_len):
    """Whole blocks in the table's order, then the first seq_len tokens."""
    _, block_size, n_head, head_dim = k_pages.shape
    length = int(seq_len)
    needed = (length + block_size - 1) // block_size
    blocks = block_table[:needed]
    keys = k_pages[blocks].reshape(needed * block_size, n_head, head_dim)[:length]
    values = v_pages[blocks].reshape(needed * block_size, n_head, head_dim)[:length]
    return torch.stack((keys, values))
