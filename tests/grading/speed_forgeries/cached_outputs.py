"""Forgery: remember every answer (in memory and on disk) and replay it when asked again."""

import hashlib
import os
import pickle

import torch

print("FORGERY output cache", flush=True)
_MEMORY = {}
_DISK = os.path.join(os.environ.get("TMPDIR", "/tmp"), "softmax-cache")


def _key(x):
    return hashlib.sha1(x.numpy().tobytes()).hexdigest()


def softmax(x):
    key = _key(x)
    if key in _MEMORY:
        return _MEMORY[key]
    path = f"{_DISK}-{key}"
    if os.path.exists(path):
        with open(path, "rb") as handle:
            return pickle.load(handle)
    result = torch.softmax(x, dim=-1)
    _MEMORY[key] = result
    try:
        with open(path, "wb") as handle:
            pickle.dump(result, handle)
    except OSError:
        pass
    return result
