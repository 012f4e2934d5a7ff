"""Grader for transformer-internals/attention-from-scratch: scaled dot-product attention.

Two functions on ``(batch, heads, seq, head_dim)`` tensors: plain attention (queries and
keys may differ in length, values in width) and causal attention (equal lengths, query i
sees keys 0..i).  The expected outputs come from ``scaled_dot_product_attention`` in
float64; the learner's own softmax, ``torch.softmax`` included, is allowed.  Failing
results are compared with the usual slips (no scale, a mask off by one or applied after
the softmax) so the feedback can name the one made.
"""

from __future__ import annotations

import math
from functools import partial

import torch
import torch.nn.functional as F

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.draws import draw_int, draw_normal
from graders.tensors import dtype_name

LIBRARY_ATTENTION = frozenset(
    {"scaled_dot_product_attention", "multi_head_attention_forward", "flex_attention"}
    | {"MultiheadAttention", "multiheadattention", "_fused_sdp_choice"}
    | {"_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention"}
    | {"_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention"}
    | {"_scaled_dot_product_cudnn_attention", "_scaled_dot_product_fused_attention_overrideable"}
)
FORBIDDEN = {"attention": LIBRARY_ATTENTION, "causal_attention": LIBRARY_ATTENTION}
HINTS = {
    "attention": (
        "attention(q, k, v) is softmax(q @ k.transpose(-2, -1) / sqrt(head_dim), dim=-1) @ v, "
        "where head_dim is q.shape[-1]; the result has shape (batch, heads, q_len, v_dim)."
    ),
    "causal_attention": (
        "causal_attention is the same, except that before the softmax every score of query i "
        "against key j > i is set to -inf, so position i attends to positions 0..i, itself "
        "included."
    ),
}
NONFINITE = (
    "your result has nan or inf where every answer is finite. A row of scores that is -inf "
    "everywhere (every key masked) makes softmax divide 0 by 0; query i must always see key "
    "i itself. Mask with -inf (or a very negative number) only where j > i."
)
PASSED_FEEDBACK = (
    "Both match PyTorch's scaled_dot_product_attention. Notice what yours stores: the full "
    "(q_len, k_len) score matrix per head, which grows with the square of the sequence. "
    "Fused attention kernels such as FlashAttention never write it to memory: they walk the "
    "keys in blocks and keep a running max and sum, the same trick as a stable softmax."
)

_UNSCALED = "that is attention without the 1/sqrt(head_dim) scale; divide the scores by it."
_BY_DIM = "you divided the scores by head_dim; divide by its square root."
_WRONG_DIM = (
    "the softmax ran over the queries; it must run over the keys, the last dim of the scores."
)


class Attention(CaseGrader):
    name = "attention"
    interface: tuple[str, ...] = ("attention", "causal_attention")
    forbidden = FORBIDDEN
    forbidden_what = "a library attention routine"
    hints = HINTS
    nonfinite_hint = NONFINITE
    passed_feedback = PASSED_FEEDBACK

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Random shapes in float32 and float64, cross-attention, and one-position edges."""
        size = partial(draw_int, gen)

        def qkv(b: int, h: int, sq: int, sk: int, d: int, dv: int) -> Inputs:
            q = draw_normal(gen, b, h, sq, d)
            k = draw_normal(gen, b, h, sk, d)
            v = draw_normal(gen, b, h, sk, dv)
            return q, k, v

        cases: list[Case] = []
        for dtype in (torch.float32, torch.float64):
            s, d = size(2, 8), size(2, 16)
            cases.append(_plain(qkv(size(1, 2), size(1, 3), s, s, d, d), dtype, "self-attention"))
        sq, sk, d = size(1, 4), size(5, 8), size(2, 16)
        cases.append(_plain(qkv(1, 2, sq, sk, d, d), torch.float32, "fewer queries than keys"))
        sq, dv = size(5, 8), size(2, 16)
        cases.append(_plain(qkv(2, 1, sq, sq, 4, dv), torch.float32, "values of another width"))
        cases.append(_plain(qkv(1, 1, 1, 1, 8, 8), torch.float32, "one position"))
        for dtype in (torch.float32, torch.float64):
            s, d = size(3, 8), size(2, 16)
            cases.append(_causal(qkv(size(1, 2), size(1, 3), s, s, d, d), dtype, "causal"))
        s = size(5, 8)
        cases.append(_causal(qkv(2, 4, s, s, 16, 16), torch.float32, "causal, 4 heads"))
        cases.append(_causal(qkv(1, 2, 1, 1, 8, 8), torch.float32, "causal, one position"))
        return cases


Inputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    scale: float,
    allowed: torch.Tensor | None = None,
    after: bool = False,
    dim: int = -1,
) -> torch.Tensor:
    """Attention written out, with the knobs the usual mistakes turn (float64 in, out)."""
    scores = q @ k.transpose(-2, -1) * scale
    if allowed is not None and not after:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=dim)
    if allowed is not None and after:
        weights = weights * allowed
    return weights @ v


def _label(what: str, inputs: Inputs, dtype: torch.dtype) -> str:
    q, k, v = inputs
    b, h, sq, d = q.shape
    lengths = f"seq {sq}" if sq == k.shape[2] else f"{sq} queries, {k.shape[2]} keys"
    width = "" if v.shape[-1] == d else f", v_dim {v.shape[-1]}"
    heads = f"{h} head" + ("s" if h > 1 else "")
    return f"{what}: batch {b}, {heads}, {lengths}, head_dim {d}{width}, {dtype_name(dtype)}"


def _case(
    function: str, inputs: Inputs, dtype: torch.dtype, label: str, mistakes: dict[str, torch.Tensor]
) -> Case:
    expected = F.scaled_dot_product_attention(*inputs, is_causal=function == "causal_attention")
    rtol, atol = (1e-5, 1e-5) if dtype == torch.float32 else (1e-9, 1e-10)
    known = tuple(Mistake(out.to(dtype), why) for why, out in mistakes.items())
    args = tuple(t.to(dtype) for t in inputs)
    return Case(function, args, expected.to(dtype), label, rtol, atol, mistakes=known)


def _plain(inputs: Inputs, dtype: torch.dtype, what: str) -> Case:
    inputs = tuple(t.to(dtype).double() for t in inputs)  # the reference sees rounded inputs
    q, k, v = inputs
    d, sq, sk = q.shape[-1], q.shape[2], k.shape[2]
    mistakes = {
        _UNSCALED: _attend(q, k, v, scale=1.0),
        _BY_DIM: _attend(q, k, v, scale=1 / d),
        _WRONG_DIM: _attend(q, k, v, scale=d**-0.5, dim=-2),
    }
    if sq == sk:
        masked = "you applied a causal mask; plain attention lets every query see every key."
        mistakes[masked] = _attend(q, k, v, scale=d**-0.5, allowed=_lower(sq))
    return _case("attention", inputs, dtype, _label(what, inputs, dtype), mistakes)


def _causal(inputs: Inputs, dtype: torch.dtype, what: str) -> Case:
    inputs = tuple(t.to(dtype).double() for t in inputs)
    q, k, v = inputs
    d, s = q.shape[-1], q.shape[2]
    scale = 1 / math.sqrt(d)
    mistakes = {
        _UNSCALED: _attend(q, k, v, scale=1.0, allowed=_lower(s)),
        _BY_DIM: _attend(q, k, v, scale=1 / d, allowed=_lower(s)),
        "no causal mask was applied: query i must not see keys after i.": _attend(
            q, k, v, scale=scale
        ),
        "the mask is off by one: query i also sees key i + 1. Allow j <= i only.": _attend(
            q, k, v, scale=scale, allowed=_lower(s, 1)
        ),
        "the mask is the wrong way round: query i sees keys i and later. Allow j <= i.": _attend(
            q, k, v, scale=scale, allowed=_lower(s).T
        ),
        "the mask was applied after the softmax, so the weights left no longer sum to 1. "
        "Set masked scores to -inf before the softmax.": _attend(
            q, k, v, scale=scale, allowed=_lower(s), after=True
        ),
        _WRONG_DIM: _attend(q, k, v, scale=scale, allowed=_lower(s), dim=-2),
    }
    return _case("causal_attention", inputs, dtype, _label(what, inputs, dtype), mistakes)


def _lower(n: int, diagonal: int = 0) -> torch.Tensor:
    """Which keys each query may see: ``[i, j]`` is True where ``j <= i + diagonal``."""
    return torch.ones(n, n, dtype=torch.bool).tril(diagonal)
