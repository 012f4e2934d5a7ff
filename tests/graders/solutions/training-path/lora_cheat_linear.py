"""Cheats: hands the products to torch.nn.functional.linear."""

import torch.nn.functional as F


def lora_linear(x, w, b, a, b_lora, alpha):
    scale = alpha / a.shape[0]
    return F.linear(x, w, b) + scale * F.linear(F.linear(x, a), b_lora)


def merge_lora(w, a, b_lora, alpha):
    return w + (alpha / a.shape[0]) * (b_lora @ a)
