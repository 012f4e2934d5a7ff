"""The function under another name."""

import torch


def speculative_decode(draft, q, p, u_accept, u_sample):
    return torch.full((draft.shape[0], draft.shape[1] + 1), -1)
