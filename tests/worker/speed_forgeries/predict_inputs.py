"""Forgery: find the seed of the trial's inputs from the first input (as if seeds were small
or reused), to replay the stream and know every later input before it arrives."""

import torch

print("FORGERY predict inputs", flush=True)
_STATE = {}


def softmax(x):
    if not _STATE:
        _STATE["tried"] = True
        for seed in range(1024):
            candidate = torch.Generator().manual_seed(seed)
            if torch.equal(torch.randn(x.shape[-1], generator=candidate) * 4, x[0]):
                print(f"FORGERY prediction found seed {seed}", flush=True)
                break
        else:
            print("FORGERY prediction missed", flush=True)
    return torch.softmax(x, dim=-1)
