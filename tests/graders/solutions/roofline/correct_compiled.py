"""The chain compiled into one kernel on a GPU; eager on a CPU, where the sandbox can't compile."""

import math

import torch


def gelu_bias_chain(x, bias):
    h = x + bias
    return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))


gelu_bias_compiled = torch.compile(gelu_bias_chain)


def fused_gelu_bias(x, bias):
    if x.is_cuda:
        return gelu_bias_compiled(x, bias)
    return gelu_bias_chain(x, bias)
