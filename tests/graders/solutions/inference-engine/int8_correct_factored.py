"""The scale factored out of the product: the matmul runs on q alone, then each output
column is scaled; a row loop for the scales and the reciprocal for the division."""

import torch


def weight_scales(w):
    scales = torch.empty(w.shape[0], dtype=torch.float32)
    for r in range(w.shape[0]):
        largest = float(w[r].abs().max())
        scales[r] = largest / 127 if largest > 0 else 1.0
    return scales


def quantize(w, scale):
    ratio = w * (1.0 / scale).unsqueeze(1)
    return torch.clamp(torch.round(ratio), min=-127, max=127).to(torch.int8)


def int8_linear(x, q, scale, bias):
    return torch.matmul(x, q.to(x.dtype).t()) * scale + bias
