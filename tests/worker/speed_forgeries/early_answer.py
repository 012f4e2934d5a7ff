"""Forgery: an answer written before its call was made (from a thread, between calls)."""

import json
import os
import struct
import threading

import torch

print("FORGERY early answer", flush=True)
_SENT = []


def _forge(address):
    header = json.dumps(
        {
            "kind": "returned",
            "nonce": "0" * 32,
            "address": address,
            "tensor": {"dtype": "float32", "shape": [2048, 1024]},
            "memory": False,
        }
    ).encode()
    os.write(3, struct.pack(">4sIQ", b"BRR1", len(header), 0) + header)


def softmax(x):
    out = torch.softmax(x, dim=-1)
    if not _SENT:
        _SENT.append(out)
        threading.Thread(target=_forge, args=(out.data_ptr(),)).start()
    return out
