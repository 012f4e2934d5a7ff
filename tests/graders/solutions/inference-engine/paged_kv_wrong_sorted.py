import torch


def gather_kv(k_pages, v_pages, block_table, seq_len):
    """The needed blocks, but sorted by physical index."""
    block_size = k_pages.shape[1]
    needed = (int(seq_len) + block_size - 1) // block_size
    blocks = sorted(block_table[:needed].tolist())
    keys = torch.cat([k_pages[b] for b in blocks])[: int(seq_len)]
    values = torch.cat([v_pages[b] for b in blocks])[: int(seq_len)]
    return torch.stack((keys, values))
