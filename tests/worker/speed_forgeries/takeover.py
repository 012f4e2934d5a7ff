"""Forgery: take over the loop that feeds this job its calls (it runs in this very process)
and serve it without the stock path: one preallocated output, nothing checked or copied."""

import sys

import torch

print("FORGERY feed takeover", flush=True)
_frame = sys._getframe()
while _frame is not None and _frame.f_code.co_name != "serve_feed":
    _frame = _frame.f_back
if _frame is not None:
    _runner, _buffers = _frame.f_locals["self"], _frame.f_locals["buffers"]
    _feed, _reader = _frame.f_locals["feed"], _frame.f_locals["reader"]
    _framing, _turns = sys.modules["sandbox.framing"], sys.modules["sandbox.turns"]
    _out = torch.empty_like(_buffers[0])
    _shape = _turns.TensorShape("float32", tuple(_out.shape))
    _runner._send({"kind": "loaded", "buffers": [b.data_ptr() for b in _buffers]})
    print("FORGERY takeover serving", flush=True)
    while (_got := _framing.read_frame(_feed, _reader)) is not None:
        _nonce = _turns.decode_go(_got[0])
        if not _nonce:  # a release: the worker has read the last result
            _runner._send({"kind": "released"})
            continue
        torch.softmax(_buffers[0], dim=-1, out=_out)
        _answer = _turns.Answer(_nonce, "returned", _out.data_ptr(), _shape)
        _runner._send(_turns.encode_answer(_answer) | {"memory": False})
    _runner._finish(0)


def softmax(x):
    return torch.softmax(x, dim=-1)
