"""Reference solution: every count in Python ints, from the rule as the prompt states it."""

import torch


def forward_flops(config, batch, seq):
    n_layer, n_head, n_embd, vocab_size, _n_ctx = config.tolist()
    b, s, c = int(batch), int(seq), n_embd
    t = b * s

    def product(m, k, n):  # (m x k) @ (k x n): a multiply and an add per term
        return 2 * m * k * n

    per_layer = (
        product(t, c, 3 * c)  # QKV projection
        + b * n_head * product(s, c // n_head, s)  # Q @ K^T, every head, in full
        + b * n_head * product(s, s, c // n_head)  # attention weights @ V
        + product(t, c, c)  # output projection
        + product(t, c, 4 * c)  # MLP up
        + product(t, 4 * c, c)  # MLP down
    )
    lm_head = product(t, c, vocab_size)
    return torch.tensor(n_layer * per_layer + lm_head, dtype=torch.int64)


def decode_step_bytes(config, batch, pos, bytes_per_element):
    n_layer, _n_head, n_embd, vocab_size, n_ctx = config.tolist()
    c = n_embd
    block = sum(
        (
            2 * c,  # ln_1 weight and bias
            3 * c * c + 3 * c,  # attn.c_attn weight and bias
            c * c + c,  # attn.c_proj
            2 * c,  # ln_2
            4 * c * c + 4 * c,  # mlp.c_fc
            4 * c * c + c,  # mlp.c_proj
        )
    )
    weights = vocab_size * c + n_ctx * c + n_layer * block + 2 * c  # wte (= lm_head), wpe, ln_f
    kv_cache = 2 * n_layer * int(batch) * int(pos) * c  # a key and a value per position
    return torch.tensor((weights + kv_cache) * int(bytes_per_element), dtype=torch.int64)
