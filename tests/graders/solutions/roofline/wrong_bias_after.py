"""Adds the bias after the activation instead of before it."""

import math

import torch


def fused_gelu_bias(x, bias):
    g = 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return g + bias
