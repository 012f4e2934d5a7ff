"""Right answers from the library softmax."""

import torch.nn.functional as F


def softmax(x):
    return F.softmax(x, dim=-1)
