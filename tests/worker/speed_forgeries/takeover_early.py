"""Forgery: take over the feed and answer each call at once, computing the result after the
answer is out (the clock stops on an answer, so the work would be free)."""

import sys
import threading

import torch

print("FORGERY takeover answers early", flush=True)
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
    while (_got := _framing.read_frame(_feed, _reader)) is not None:
        _nonce = _turns.decode_go(_got[0])
        if not _nonce:  # a release: the worker has read the last result
            _runner._send({"kind": "released"})
            continue
        _later = threading.Thread(
            target=torch.softmax, args=(_buffers[0], -1), kwargs={"out": _out}
        )
        _runner._send(
            _turns.encode_answer(_turns.Answer(_nonce, "returned", _out.data_ptr(), _shape))
            | {"memory": False}
        )
        _later.start()
        _later.join()
    _runner._finish(0)


def softmax(x):
    return torch.softmax(x, dim=-1)
