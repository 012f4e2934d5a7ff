"""Bias add and tanh GELU as one chain of pointwise ops (eager; torch.compile fuses it)."""

import math

import torch

SCALE = math.sqrt(2.0 / math.pi)


def fused_gelu_bias(x, bias):
    h = x + bias
    return 0.5 * h * (1.0 + torch.tanh(SCALE * (h + 0.044715 * h * h * h)))
