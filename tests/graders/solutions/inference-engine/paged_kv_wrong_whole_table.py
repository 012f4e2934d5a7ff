import torch


def gather_kv(k_pages, v_pages, block_table, seq_len):
    """Every block the table lists, junk included, then the first seq_len tokens."""
    n_head, head_dim = k_pages.shape[2:]
    keys = k_pages[block_table].reshape(-1, n_head, head_dim)[: int(seq_len)]
    values = v_pages[block_table].reshape(-1, n_head, head_dim)[: int(seq_len)]
    return torch.stack((keys, values))
