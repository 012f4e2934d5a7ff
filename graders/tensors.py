"""Tensors across the sandbox boundary: ``RawTensor`` <-> ``torch.Tensor``.

Graders rebuild learner output with ``torch.frombuffer`` over a private copy of the
bytes, so nothing a submission produced is ever unpickled.  Bytes are in native
(little-endian) order, as both sides run on the same kind of machine.  numpy is not
needed: the worker may not have it.
"""

from __future__ import annotations

import ctypes

import torch

from sandbox.api import RawTensor


def dtype_name(dtype: torch.dtype) -> str:
    """``float32`` for ``torch.float32``: the name ``RawTensor`` carries and feedback shows."""
    return str(dtype).removeprefix("torch.")


def to_raw(tensor: torch.Tensor) -> RawTensor:
    """Copy a tensor's values into a ``RawTensor`` (dense, C-contiguous, on the CPU)."""
    dense = tensor.detach().to("cpu").contiguous()
    data = ctypes.string_at(dense.data_ptr(), dense.nbytes) if dense.nbytes else b""
    return RawTensor(dtype_name(dense.dtype), tuple(dense.shape), data)


def from_raw(raw: RawTensor) -> torch.Tensor:
    """Rebuild a tensor that owns its memory; ``raw.dtype`` was validated by ``RawTensor``."""
    dtype = getattr(torch, raw.dtype)
    if not raw.data:  # frombuffer rejects an empty buffer
        return torch.empty(raw.shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw.data), dtype=dtype).reshape(raw.shape)
