import torch


def gather_kv(k_pages, v_pages, block_table, seq_len):
    """Keys then values along the token dim: (2 * seq_len, n_head, head_dim)."""
    block_size = k_pages.shape[1]
    t = torch.arange(int(seq_len))
    blocks, slots = block_table[t // block_size], t % block_size
    return torch.cat((k_pages[blocks, slots], v_pages[blocks, slots]))
