"""Speed references: the trusted implementations a speed trial times the learner against.

A speed-ranked grader declares ``speed=Speed(NAME, REF)`` (``graders.declaration``); REF
names a module here.  Each module defines ``reference(*inputs)`` (what the learner's function
must match and is raced against), ``inputs(generator)`` (one fresh draw of the timed inputs,
large enough that the work dwarfs the clock's own overhead of about 0.2 ms), ``TOLERANCE =
(rtol, atol)``, and ``moved_bytes(*inputs)`` and ``flops(*inputs)``: *lower bounds* of the
bytes the op must move and the FLOPs it must do, whatever the algorithm.  A timed call faster
than those allow at the host's measured peaks is refused as a forgery (the physics floor),
and the bytes give the roofline reading (achieved GB/s against the peak).

The module's own source runs in the sandbox for the reference's turns, under the learner's
limits on the same core; the worker imports it to draw inputs and compute the expected
results.  Importing this package never imports torch (the bot validates quests with it).
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: reference name -> what it is, for ``brrrbot quests check`` and the boards
REFERENCES: dict[str, str] = {
    "softmax_rows": "torch.softmax over the last dim of a 2048x1024 float32 matrix",
    "attention_naive": "softmax(q k^T / sqrt(d)) v on 2x4x512x64 float32, eager ops",
    "gelu_bias_eager": "the tanh GELU of x + bias as eager ops on 1024x1024 float32",
    "cumsum_mask": "the broadcasting cumsum (a masked n x n sum) of 2048 float32",
    "decode_step": "a GPT-2 small attention decode step over 256 cached tokens, eager ops",
}


def load(name: str) -> ModuleType:
    """The reference module ``name``; KeyError for a name not in REFERENCES."""
    if name not in REFERENCES:
        raise KeyError(name)
    return importlib.import_module(f"{__name__}.{name}")
