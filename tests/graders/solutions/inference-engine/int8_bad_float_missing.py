"""Returns q as float32 (torch.round's dtype) and never defines int8_linear."""

import torch


def weight_scales(w):
    largest = w.abs().amax(dim=1)
    return torch.where(largest == 0, 1.0, largest / 127)


def quantize(w, scale):
    return torch.round(w / scale[:, None]).clamp(-127, 127)
