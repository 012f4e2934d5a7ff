import torch


def gather_kv(k_pages, v_pages, block_table, seq_len):
    """The right numbers, in a tensor made without a dtype (float32)."""
    _, block_size, n_head, head_dim = k_pages.shape
    out = torch.zeros(2, int(seq_len), n_head, head_dim)
    for t in range(int(seq_len)):
        block = block_table[t // block_size]
        out[0, t] = k_pages[block, t % block_size]
        out[1, t] = v_pages[block, t % block_size]
    return out
