"""Bias add and tanh GELU fused by hand for a CPU: one new buffer, every op in place on it."""

import math

SCALE = math.sqrt(2.0 / math.pi)


def fused_gelu_bias(x, bias):
    h = x + bias  # the one buffer the result is built in
    inner = h * h
    inner.mul_(0.044715).add_(1.0).mul_(h).mul_(SCALE).tanh_().add_(1.0)
    return inner.mul_(h).mul_(0.5)
