"""Leaves an all-zero row's scale at 0 and forgets the bias."""

import torch


def weight_scales(w):
    return w.abs().amax(dim=1) / 127


def quantize(w, scale):
    return torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8)


def int8_linear(x, q, scale, bias):
    return x @ (q.float() * scale[:, None]).T
