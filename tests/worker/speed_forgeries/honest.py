"""The honest equivalent every forgery is compared with: the library softmax, once per call."""

import torch


def softmax(x):
    return torch.softmax(x, dim=-1)
