"""Speed reference for inference-engine/kv-cache-decode: one decode step of GPT-2 small's
attention against a KV cache, as eager ops.

One new token per sequence (C = 768, 12 heads of 64) attends to 256 cached positions and
itself; the cache buffer holds 64 more slots, NaN until written.  The step must read every
weight once and the cached keys and values of each sequence: the roofline reading counts
those bytes, which is what makes decode memory-bound and batching worth it.  Self-contained:
its source runs in the sandbox for the reference's turns.
"""

import math

import torch

TOLERANCE = (1e-4, 1e-5)

C = 768  # GPT-2 small's width
N_HEAD = 12
POS = 256  # tokens already cached: the new token's position
T = POS + 64  # the cache buffer's length; slots from POS on hold NaN
#: weights drawn like GPT-2's initialisation (std 0.02); the input is layer-normed (std 1),
#: so cached keys and values have the spread of a real projection, 0.02 · sqrt(C)
WEIGHT_STD = 0.02
FLOAT_BYTES = 4


def reference(
    x: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    pos: torch.Tensor,
    w_qkv: torch.Tensor,
    b_qkv: torch.Tensor,
    w_proj: torch.Tensor,
    b_proj: torch.Tensor,
    n_head: torch.Tensor,
) -> torch.Tensor:
    batch, width = x.shape
    heads, cached = int(n_head), int(pos)
    size = width // heads
    q, k, v = (x @ w_qkv + b_qkv).split(width, dim=-1)
    keys = torch.cat((k_cache[:, :, :cached], k.reshape(batch, heads, 1, size)), dim=2)
    values = torch.cat((v_cache[:, :, :cached], v.reshape(batch, heads, 1, size)), dim=2)
    scores = q.reshape(batch, heads, 1, size) @ keys.transpose(-2, -1) / math.sqrt(size)
    y = (torch.softmax(scores, dim=-1) @ values).reshape(batch, width) @ w_proj + b_proj
    return torch.stack([y, k, v], dim=1)


def _uniform(generator: torch.Generator, std: float, *shape: int) -> torch.Tensor:
    """Uniform values of standard deviation ``std`` on 65536 levels, four from each 64-bit
    random word: a step draws millions of them, and this takes a third of ``uniform_``'s time
    (a batch of 16 is 11 million numbers a call, drawn while the trial waits)."""
    count = math.prod(shape)
    words = torch.randint(
        -(2**63), 2**63 - 1, ((count + 3) // 4,), dtype=torch.int64, generator=generator
    )
    levels = words.view(torch.int16)[:count].float()
    return levels.mul_(std * math.sqrt(3.0) / 2**15).reshape(shape)


def inputs(generator: torch.Generator, batch: int = 1) -> tuple[torch.Tensor, ...]:
    """A fresh step for ``batch`` sequences, each with POS tokens cached."""
    size = C // N_HEAD
    spread = WEIGHT_STD * math.sqrt(C)
    k_cache = torch.full((batch, N_HEAD, T, size), math.nan)
    v_cache = torch.full((batch, N_HEAD, T, size), math.nan)
    k_cache[:, :, :POS] = _uniform(generator, spread, batch, N_HEAD, POS, size)
    v_cache[:, :, :POS] = _uniform(generator, spread, batch, N_HEAD, POS, size)
    return (
        _uniform(generator, 1.0, batch, C),
        k_cache,
        v_cache,
        torch.tensor(POS),
        _uniform(generator, WEIGHT_STD, C, 3 * C),
        _uniform(generator, WEIGHT_STD, 3 * C),
        _uniform(generator, WEIGHT_STD, C, C),
        _uniform(generator, WEIGHT_STD, C),
        torch.tensor(N_HEAD),
    )


def weight_bytes(width: int) -> int:
    """The layer's weights and biases, each read once per step: w_qkv, b_qkv, w_proj, b_proj."""
    return FLOAT_BYTES * (width * 3 * width + 3 * width + width * width + width)


def cache_bytes(batch: int, cached: int, width: int) -> int:
    """The cached keys and values each sequence's new token attends to."""
    return FLOAT_BYTES * 2 * batch * cached * width


def moved_bytes(
    x: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    pos: torch.Tensor,
    w_qkv: torch.Tensor,
    b_qkv: torch.Tensor,
    w_proj: torch.Tensor,
    b_proj: torch.Tensor,
    n_head: torch.Tensor,
) -> int:
    """At least: the weights once, the cache's filled slots (not the whole buffer), x once,
    and the result written once."""
    batch, width = x.shape
    return (
        weight_bytes(width)
        + cache_bytes(batch, int(pos), width)
        + FLOAT_BYTES * batch * width  # x
        + FLOAT_BYTES * batch * 3 * width  # y, k_new, v_new
    )


def flops(
    x: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    pos: torch.Tensor,
    w_qkv: torch.Tensor,
    b_qkv: torch.Tensor,
    w_proj: torch.Tensor,
    b_proj: torch.Tensor,
    n_head: torch.Tensor,
) -> int:
    """At least the two projections (2·C·3C and 2·C·C per sequence) and the attention over
    pos + 1 keys: the scores and the weighted values, 2·(pos + 1)·C each per sequence."""
    batch, width = x.shape
    projections = 2 * batch * width * 3 * width + 2 * batch * width * width
    return projections + 2 * (2 * batch * (int(pos) + 1) * width)
