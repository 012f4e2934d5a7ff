def gather_kv(k_pages, v_pages, block_table, seq_len):
    """Token by token into Python lists, never made a tensor."""
    block_size = k_pages.shape[1]
    keys, values = [], []
    for t in range(int(seq_len)):
        block = int(block_table[t // block_size])
        keys.append(k_pages[block, t % block_size].tolist())
        values.append(v_pages[block, t % block_size].tolist())
    return [keys, values]
