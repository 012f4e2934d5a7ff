"""The exact erf GELU: close to the tanh form, but not the function the task asks for."""

import math

import torch


def fused_gelu_bias(x, bias):
    h = x + bias
    return 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
