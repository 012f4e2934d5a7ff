"""Returns the wrong kinds of thing: scales with keepdim's extra dim, q as int64, and the
layer's rows as a Python list."""

import torch


def weight_scales(w):
    largest = w.abs().amax(dim=1, keepdim=True)
    return torch.where(largest == 0, 1.0, largest / 127)


def quantize(w, scale):
    return torch.round(w / scale[:, None]).clamp(-127, 127).long()


def int8_linear(x, q, scale, bias):
    return (x @ (q.float() * scale[:, None]).T + bias).tolist()
