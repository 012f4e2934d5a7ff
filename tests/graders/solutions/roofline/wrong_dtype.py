"""Upcasts for accuracy but forgets to cast the result back to x's dtype."""

import math

import torch


def fused_gelu_bias(x, bias):
    h = x.float() + bias.float()
    return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))
