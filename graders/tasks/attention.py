"""Grader for transformer-internals/attention-from-scratch: scaled dot-product attention.

Two functions on ``(batch, heads, seq, head_dim)`` tensors: plain attention (queries and
keys may differ in length, values in width) and causal attention (equal lengths, query i
sees keys 0..i).  The expected outputs come from ``scaled_dot_product_attention`` in
float64; the learner's own softmax, ``torch.softmax`` included, is allowed.  Failing
results are compared with the usual slips (no scale, a mask off by one or applied after
the softmax) so the feedback can name the one made.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.declaration import Declaration, Speed
from graders.draws import draw_int, draw_normal
from graders.tensors import dtype_name

DECLARATION = Declaration(
    functions=(
        "attention(q, k, v) -> Tensor",
        "causal_attention(q, k, v) -> Tensor",
    ),
    speed=Speed("attention", "attention_naive"),
)

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

#: (rtol, atol) per input dtype, as the task's prompt states them
TOLERANCE = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-10, 1e-10)}
#: the fixed cases' inputs are drawn once from this seed, the same in every plan
_FIXED_SEED = 8

_UNSCALED = "that is attention without the 1/sqrt(head_dim) scale; divide the scores by it."
_BY_DIM = "you divided the scores by head_dim; divide by its square root."
_BY_V_DIM = (
    "you scaled by the width of the values (v.shape[-1]); the scale is 1/sqrt(head_dim) "
    "with head_dim = q.shape[-1], the length of the dot products, and the two may differ."
)
_WRONG_DIM = (
    "the softmax ran over the queries; it must run over the keys, the last dim of the scores."
)

Inputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
Draw = Callable[[int, int, int, int, int, int], Inputs]


class Attention(CaseGrader):
    declaration = DECLARATION
    forbidden = FORBIDDEN
    forbidden_what = "a library attention routine"
    hints = HINTS
    nonfinite_hint = NONFINITE
    passed_feedback = PASSED_FEEDBACK

    def fixed_cases(self, device: str) -> list[Case]:
        """Each slip fails these, the same in every plan: head_dim above 1 (so no scale,
        head_dim and its root differ), values wider and narrower than the head, more keys
        than queries and equal lengths (a stray causal mask), in both dtypes."""
        qkv = _drawing(torch.Generator().manual_seed(_FIXED_SEED))
        plain = partial(_plain, drawn=False)
        causal = partial(_causal, drawn=False)
        f32, f64 = torch.float32, torch.float64
        return [
            plain(qkv(1, 2, 5, 5, 8, 8), f32, "self-attention"),
            plain(qkv(1, 2, 4, 4, 4, 4), f64, "self-attention"),
            plain(qkv(1, 2, 3, 6, 8, 8), f32, "fewer queries than keys"),
            plain(qkv(2, 1, 5, 5, 4, 9), f32, "values wider than the head"),
            plain(qkv(1, 2, 3, 6, 9, 3), f32, "values narrower than the head"),
            causal(qkv(2, 2, 6, 6, 8, 8), f32, "causal"),
            causal(qkv(1, 2, 5, 5, 4, 4), f64, "causal"),
            causal(qkv(1, 2, 5, 5, 4, 7), f32, "causal, values wider than the head"),
            causal(qkv(1, 1, 1, 1, 8, 8), f32, "causal, one position"),
        ]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Random shapes in float32 and float64, cross-attention, values of another width."""
        size, qkv = partial(draw_int, gen), _drawing(gen)
        cases: list[Case] = []
        for dtype in (torch.float32, torch.float64):
            s, d = size(2, 8), size(2, 16)
            cases.append(_plain(qkv(size(1, 2), size(1, 3), s, s, d, d), dtype, "self-attention"))
        sq, sk, d = size(1, 4), size(5, 8), size(2, 16)
        cases.append(_plain(qkv(1, 2, sq, sk, d, d), torch.float32, "fewer queries than keys"))
        s, d = size(5, 8), size(2, 16)
        cases.append(
            _plain(qkv(2, 1, s, s, d, _other(gen, d)), torch.float32, "values of another width")
        )
        cases.append(_plain(qkv(1, 1, 1, 1, 8, 8), torch.float32, "one position"))
        for dtype in (torch.float32, torch.float64):
            s, d = size(3, 8), size(2, 16)
            cases.append(_causal(qkv(size(1, 2), size(1, 3), s, s, d, d), dtype, "causal"))
        s, d = size(3, 8), size(2, 16)
        cases.append(
            _causal(
                qkv(1, 2, s, s, d, _other(gen, d)), torch.float32, "causal, values of another width"
            )
        )
        s = size(5, 8)
        cases.append(_causal(qkv(2, 4, s, s, 16, 16), torch.float32, "causal, 4 heads"))
        return cases


def _drawing(gen: torch.Generator) -> Draw:
    """``qkv(b, h, sq, sk, d, dv)``: standard normal q, k, v of those sizes from ``gen``."""

    def qkv(b: int, h: int, sq: int, sk: int, d: int, dv: int) -> Inputs:
        q = draw_normal(gen, b, h, sq, d)
        k = draw_normal(gen, b, h, sk, d)
        v = draw_normal(gen, b, h, sk, dv)
        return q, k, v

    return qkv


def _other(gen: torch.Generator, d: int) -> int:
    """A width in 2..16 other than ``d``, so scaling by the values' width shows."""
    width = draw_int(gen, 2, 15)
    return width + 1 if width >= d else width


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    scale: float,
    allowed: torch.Tensor | None = None,
    after: bool = False,
    fill: float = float("-inf"),
    dim: int = -1,
) -> torch.Tensor:
    """Attention written out, with the knobs the usual mistakes turn (float64 in, out)."""
    scores = q @ k.transpose(-2, -1) * scale
    if allowed is not None and not after:
        scores = scores.masked_fill(~allowed, fill)
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
    function: str,
    inputs: Inputs,
    dtype: torch.dtype,
    label: str,
    mistakes: dict[str, torch.Tensor],
    drawn: bool,
) -> Case:
    expected = F.scaled_dot_product_attention(*inputs, is_causal=function == "causal_attention")
    rtol, atol = TOLERANCE[dtype]
    known = tuple(Mistake(out.to(dtype), why) for why, out in mistakes.items())
    args = tuple(t.to(dtype) for t in inputs)
    return Case(function, args, expected.to(dtype), label, rtol, atol, mistakes=known, drawn=drawn)


def _scales(q: torch.Tensor, v: torch.Tensor) -> dict[str, float]:
    """The wrong scales, by explanation: none, 1/head_dim and 1/sqrt(values' width)."""
    return {_UNSCALED: 1.0, _BY_DIM: 1 / q.shape[-1], _BY_V_DIM: v.shape[-1] ** -0.5}


def _plain(inputs: Inputs, dtype: torch.dtype, what: str, *, drawn: bool = True) -> Case:
    inputs = tuple(t.to(dtype).double() for t in inputs)  # the reference sees rounded inputs
    q, k, v = inputs
    scale, sq, sk = q.shape[-1] ** -0.5, q.shape[2], k.shape[2]
    mistakes = {why: _attend(q, k, v, scale=wrong) for why, wrong in _scales(q, v).items()}
    mistakes[_WRONG_DIM] = _attend(q, k, v, scale=scale, dim=-2)
    masked = "you applied a causal mask; plain attention lets every query see every key."
    mistakes[masked] = _attend(q, k, v, scale=scale, allowed=_lower(sq, sk))
    return _case("attention", inputs, dtype, _label(what, inputs, dtype), mistakes, drawn)


def _causal(inputs: Inputs, dtype: torch.dtype, what: str, *, drawn: bool = True) -> Case:
    inputs = tuple(t.to(dtype).double() for t in inputs)
    q, k, v = inputs
    scale, s = q.shape[-1] ** -0.5, q.shape[2]
    mask = _lower(s, s)
    mistakes = {
        why: _attend(q, k, v, scale=wrong, allowed=mask) for why, wrong in _scales(q, v).items()
    }
    mistakes |= {
        "no causal mask was applied: query i must not see keys after i.": _attend(
            q, k, v, scale=scale
        ),
        "the mask is off by one: query i also sees key i + 1. Allow j <= i only.": _attend(
            q, k, v, scale=scale, allowed=_lower(s, s, 1)
        ),
        "the mask is the wrong way round: query i sees keys i and later. Allow j <= i.": _attend(
            q, k, v, scale=scale, allowed=mask.T
        ),
        "the mask was applied after the softmax, so the weights left no longer sum to 1. "
        "Set masked scores to -inf before the softmax.": _attend(
            q, k, v, scale=scale, allowed=mask, after=True
        ),
        "the masked scores were set to 0, and a score of 0 still gets weight exp(0) in the "
        "softmax. Set them to -inf (or a very negative number).": _attend(
            q, k, v, scale=scale, allowed=mask, fill=0.0
        ),
        _WRONG_DIM: _attend(q, k, v, scale=scale, allowed=mask, dim=-2),
    }
    return _case("causal_attention", inputs, dtype, _label(what, inputs, dtype), mistakes, drawn)


def _lower(rows: int, columns: int, diagonal: int = 0) -> torch.Tensor:
    """Which keys each query may see: ``[i, j]`` is True where ``j <= i + diagonal``."""
    return torch.ones(rows, columns, dtype=torch.bool).tril(diagonal)
