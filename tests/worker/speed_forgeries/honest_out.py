"""The takeover's honest twin: the same maths into one buffer kept across calls."""

import torch

_OUT = {}


def softmax(x):
    out = _OUT.get("out")
    if out is None or out.shape != x.shape:
        out = _OUT["out"] = torch.empty_like(x)
    return torch.softmax(x, dim=-1, out=out)
