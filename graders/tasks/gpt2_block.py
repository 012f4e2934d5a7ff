"""Grader for forward-pass/gpt2-block: LayerNorm, causal self-attention, the MLP and the
whole pre-norm GPT-2 block, each checked against torch's own ops run in float64.

Weights follow the ``nn.Linear`` convention, ``(out_features, in_features)`` with
``y = x @ W.T + b``, so the learner has to transpose GPT-2's Conv1D checkpoints once,
at load time, and never inside the block.  ``n_head`` travels as a 0-d int64 tensor
because sandbox calls take tensors only.

Configs are small (n_embd 16..48, 2 or 4 heads, up to 10 positions) so a CPU grades
them in milliseconds; weights are scaled so every activation is of order one, which
keeps attention non-uniform and a wrong GELU or variance visible at float32 tolerance.
The fixed cases add rows whose values barely vary (standard deviation 0.003 to 0.03),
where LayerNorm's epsilon shows: at a spread of order one, dropping it or moving it
outside the square root changes results by about the float32 tolerance at most.
Each case carries what the usual slips return for it, so a failure names its cause.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import partial
from types import MappingProxyType
from typing import Literal

import torch
import torch.nn.functional as F

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.declaration import Declaration
from graders.draws import draw_int

DECLARATION = Declaration(
    functions=(
        "layer_norm(x, weight, bias) -> Tensor",
        "causal_self_attention(x, w_qkv, b_qkv, w_proj, b_proj, n_head) -> Tensor",
        "mlp(x, w_fc, b_fc, w_proj, b_proj) -> Tensor",
        "gpt2_block(x, ln_1_weight, ln_1_bias, w_qkv, b_qkv, w_attn_proj, b_attn_proj, "
        "ln_2_weight, ln_2_bias, w_fc, b_fc, w_mlp_proj, b_mlp_proj, n_head) -> Tensor",
    ),
)

EPS = 1e-5
#: float32 results within ATOL + RTOL * |expected| of the float64 reference; correct
#: formulations land within a tenth of it, the erf GELU 13 times beyond it
#: (bench/grader_margins.py)
RTOL = 3e-5
ATOL = 3e-5
FIXED_SEED = 20261201

NORM_NAMES = frozenset(
    {"layer_norm", "LayerNorm", "layernorm", "native_layer_norm", "group_norm", "GroupNorm"}
    | {"rms_norm", "RMSNorm", "batch_norm", "instance_norm"}
)
ATTENTION_NAMES = frozenset(
    {"scaled_dot_product_attention", "MultiheadAttention", "multiheadattention"}
    | {"multi_head_attention_forward", "flex_attention"}
)
GELU_NAMES = frozenset({"gelu", "GELU", "gelu_"})

FORBIDDEN = MappingProxyType(
    {
        "layer_norm": NORM_NAMES,
        "causal_self_attention": ATTENTION_NAMES,
        "mlp": GELU_NAMES,
        "gpt2_block": NORM_NAMES | ATTENTION_NAMES | GELU_NAMES,
    }
)
HINTS = MappingProxyType(
    {
        "layer_norm": (
            "Over the last dimension: subtract the mean, divide by sqrt(variance + 1e-5) with "
            "the biased variance (divide by C, not C - 1: torch.var(..., unbiased=False)), "
            "then multiply by weight and add bias."
        ),
        "causal_self_attention": (
            "qkv = x @ w_qkv.T + b_qkv, split into q, k, v (in that order) of width C; give "
            "each head C / n_head consecutive features; scores = q @ k.T / sqrt(head_dim) with "
            "future positions masked to -inf before the softmax; merge the heads back and "
            "apply w_proj, b_proj."
        ),
        "mlp": (
            "x @ w_fc.T + b_fc, then GPT-2's tanh GELU "
            "0.5 * h * (1 + tanh(sqrt(2 / pi) * (h + 0.044715 * h**3))), then "
            "@ w_proj.T + b_proj. The erf GELU (nn.GELU's default) is close but not equal."
        ),
        "gpt2_block": (
            "Pre-norm residuals: x = x + causal_self_attention(layer_norm(x, ln_1...), ...), "
            "then x = x + mlp(layer_norm(x, ln_2...), ...). The LayerNorm goes inside each "
            "branch, not after the sum."
        ),
    }
)
_TANH_GELU = "0.5 * h * (1 + tanh(sqrt(2 / pi) * (h + 0.044715 * h**3)))"


@dataclass(frozen=True)
class Config:
    batch: int
    seq: int
    n_embd: int
    n_head: int

    @property
    def label(self) -> str:
        return f"batch {self.batch}, seq {self.seq}, n_embd {self.n_embd}, {self.n_head} heads"


@dataclass(frozen=True)
class Params:
    """One block's parameters in float32, in the order ``gpt2_block`` takes them."""

    ln_1_weight: torch.Tensor
    ln_1_bias: torch.Tensor
    w_qkv: torch.Tensor
    b_qkv: torch.Tensor
    w_attn_proj: torch.Tensor
    b_attn_proj: torch.Tensor
    ln_2_weight: torch.Tensor
    ln_2_bias: torch.Tensor
    w_fc: torch.Tensor
    b_fc: torch.Tensor
    w_mlp_proj: torch.Tensor
    b_mlp_proj: torch.Tensor

    def ordered(self) -> tuple[torch.Tensor, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))


class Gpt2Block(CaseGrader):
    declaration = DECLARATION
    forbidden = FORBIDDEN
    forbidden_what = "a library version of a piece this task asks you to write"
    hints = HINTS
    passed_feedback = (
        "All four match. That is every computation inside GPT-2 except the embeddings at the "
        "start and the final LayerNorm and unembedding at the end. Next, load layer 0 of the "
        "real GPT-2 weights (transpose each Conv1D weight first) and check your block "
        "reproduces Hugging Face's hidden state after layer 0."
    )

    def fixed_cases(self, device: str) -> list[Case]:
        """One config with several heads and positions, where every listed slip shows;
        LayerNorm and the block also get rows of small spread, where the epsilon shows."""
        gen = torch.Generator().manual_seed(FIXED_SEED)
        config = Config(batch=2, seq=6, n_embd=32, n_head=4)
        params = _params(gen, config.n_embd)
        x = _randn(gen, (config.batch, config.seq, config.n_embd))
        quiet = _small_spread(gen, x.shape)
        n_head = torch.tensor(config.n_head, dtype=torch.int64)
        small = f"{config.label}, rows of small spread (std 0.003 to 0.03) where 1e-5 matters"
        cases = [
            _case("layer_norm", (quiet, params.ln_1_weight, params.ln_1_bias), small),
            _case("gpt2_block", (quiet, *params.ordered(), n_head), small),
        ]
        cases += _function_cases(gen, config, params, x=x)
        return [replace(c, drawn=False) for c in cases]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Four configs, each a case for every function; the first has a single position,
        where the causal mask changes nothing."""
        cases: list[Case] = []
        for i in range(4):
            config = _config(gen, seq=1 if i == 0 else None)
            params = _params(gen, config.n_embd)
            cases += _function_cases(gen, config, params, two_d_norm=i == 1)
        return cases


def _function_cases(
    gen: torch.Generator,
    config: Config,
    p: Params,
    *,
    x: torch.Tensor | None = None,
    two_d_norm: bool = False,
) -> list[Case]:
    """One case per function; the block gets the same input and weights as its pieces."""
    shape = (config.batch, config.seq, config.n_embd)
    x = _randn(gen, shape) if x is None else x
    # LayerNorm must remove an offset and a scale: give its input both.
    shifted = x * 3.0 + _randn(gen, (config.n_embd,)) * 2.0
    norm_label = config.label
    if two_d_norm:  # any leading dimensions: a 2-D input too
        shifted = shifted[0]
        norm_label = f"2-D input of shape {tuple(shifted.shape)}"
    n_head = torch.tensor(config.n_head, dtype=torch.int64)
    label = config.label
    return [
        _case("layer_norm", (shifted, p.ln_1_weight, p.ln_1_bias), norm_label),
        _case(
            "causal_self_attention",
            (x, p.w_qkv, p.b_qkv, p.w_attn_proj, p.b_attn_proj, n_head),
            label,
        ),
        _case("mlp", (x, p.w_fc, p.b_fc, p.w_mlp_proj, p.b_mlp_proj), label),
        _case("gpt2_block", (x, *p.ordered(), n_head), label),
    ]


def _case(function: str, args: tuple[torch.Tensor, ...], label: str) -> Case:
    """The reference and every slip that touches ``function`` run in float64 on float64
    copies of the inputs; the learner gets float32 and must return float32."""
    wide = tuple(a.double() if a.is_floating_point() else a for a in args)
    expected = REFERENCE.output(function, wide).to(torch.float32)
    mistakes = tuple(
        Mistake(way.output(function, wide).to(torch.float32), why)
        for why, way in MISTAKES
        if way.touches(function)
    )
    return Case(function, args, expected, label, rtol=RTOL, atol=ATOL, mistakes=mistakes)


def _config(gen: torch.Generator, seq: int | None) -> Config:
    n_head = (2, 4)[draw_int(gen, 0, 1)]
    n_embd = (16, 24, 32, 48)[draw_int(gen, 0, 3)]
    return Config(
        batch=draw_int(gen, 1, 2),
        seq=seq if seq is not None else draw_int(gen, 3, 10),
        n_embd=n_embd,
        n_head=n_head,
    )


def _params(gen: torch.Generator, c: int) -> Params:
    """Weights scaled by 1/sqrt(fan_in) so activations stay of order one."""

    def weight(out: int, fan_in: int) -> torch.Tensor:
        return _randn(gen, (out, fan_in)) / math.sqrt(fan_in)

    def bias(n: int) -> torch.Tensor:
        return _randn(gen, (n,)) * 0.1

    return Params(
        ln_1_weight=1.0 + bias(c),
        ln_1_bias=bias(c),
        w_qkv=weight(3 * c, c) * 1.5,  # sharper attention than uniform
        b_qkv=bias(3 * c),
        w_attn_proj=weight(c, c),
        b_attn_proj=bias(c),
        ln_2_weight=1.0 + bias(c),
        ln_2_bias=bias(c),
        w_fc=weight(4 * c, c) * 2.0,  # pre-activations reach where the GELU forms differ
        b_fc=bias(4 * c),
        w_mlp_proj=weight(c, 4 * c),
        b_mlp_proj=bias(c),
    )


def _small_spread(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    """Rows whose standard deviation cycles through 0.003, 0.01 and 0.03 around small
    offsets: the variance is of the order of the epsilon, so where it sits shows."""
    rows = math.prod(shape[:-1])
    spread = torch.tensor((0.003, 0.01, 0.03)).repeat(rows // 3 + 1)[:rows]
    values = _randn(gen, shape) * spread.reshape(*shape[:-1], 1)
    return values + _randn(gen, shape[-1:]) * 0.01


def _randn(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randn(shape, generator=gen, dtype=torch.float32)


# -- the trusted reference (torch's own ops) and the usual slips, all in float64 -----------


def _ref_layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps=EPS)


def _ref_attention(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    b_qkv: torch.Tensor,
    w_proj: torch.Tensor,
    b_proj: torch.Tensor,
    n_head: torch.Tensor,
) -> torch.Tensor:
    batch, seq, c = x.shape
    heads = int(n_head)
    q, k, v = F.linear(x, w_qkv, b_qkv).split(c, dim=-1)
    q, k, v = (t.view(batch, seq, heads, c // heads).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return F.linear(y.transpose(1, 2).reshape(batch, seq, c), w_proj, b_proj)


def _ref_mlp(
    x: torch.Tensor,
    w_fc: torch.Tensor,
    b_fc: torch.Tensor,
    w_proj: torch.Tensor,
    b_proj: torch.Tensor,
) -> torch.Tensor:
    return F.linear(F.gelu(F.linear(x, w_fc, b_fc), approximate="tanh"), w_proj, b_proj)


def _slipped_layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    *,
    eps: float = EPS,
    eps_outside: bool = False,
    correction: int = 0,
) -> torch.Tensor:
    centred = x - x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, correction=correction)
    spread = var.sqrt() + eps if eps_outside else (var + eps).sqrt()
    return centred / spread * weight + bias


def _slipped_attention(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    b_qkv: torch.Tensor,
    w_proj: torch.Tensor,
    b_proj: torch.Tensor,
    n_head: torch.Tensor,
    *,
    causal: bool = True,
    divisor: Callable[[int, int], float] = lambda c, d: math.sqrt(d),
    split_flat: bool = False,
    merge_flat: bool = False,
) -> torch.Tensor:
    """Attention written out; ``divisor(C, D)`` divides the scores; ``split_flat`` and
    ``merge_flat`` reshape between (B, T, C) and (B, n_head, T, D) without a transpose."""
    batch, seq, c = x.shape
    heads = int(n_head)
    d = c // heads
    q, k, v = F.linear(x, w_qkv, b_qkv).split(c, dim=-1)
    if split_flat:
        q, k, v = (t.reshape(batch, heads, seq, d) for t in (q, k, v))
    else:
        q, k, v = (t.view(batch, seq, heads, d).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / divisor(c, d)
    if causal:
        future = torch.ones(seq, seq, dtype=torch.bool).triu(diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
    y = torch.softmax(scores, dim=-1) @ v
    y = y.reshape(batch, seq, c) if merge_flat else y.transpose(1, 2).reshape(batch, seq, c)
    return F.linear(y, w_proj, b_proj)


def _slipped_mlp(
    x: torch.Tensor,
    w_fc: torch.Tensor,
    b_fc: torch.Tensor,
    w_proj: torch.Tensor,
    b_proj: torch.Tensor,
    *,
    gelu: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    return F.linear(gelu(F.linear(x, w_fc, b_fc)), w_proj, b_proj)


Wiring = Literal["pre-norm", "post-norm", "parallel", "normalised residual"]


@dataclass(frozen=True)
class Way:
    """How the four functions are computed: the reference, or it with one slip."""

    layer_norm: Callable[..., torch.Tensor] = _ref_layer_norm
    attention: Callable[..., torch.Tensor] = _ref_attention
    mlp: Callable[..., torch.Tensor] = _ref_mlp
    wiring: Wiring = "pre-norm"

    def output(self, function: str, args: tuple[torch.Tensor, ...]) -> torch.Tensor:
        if function == "gpt2_block":
            return self.block(*args)
        return self.piece(function)(*args)

    def piece(self, function: str) -> Callable[..., torch.Tensor]:
        pieces = {
            "layer_norm": self.layer_norm,
            "causal_self_attention": self.attention,
            "mlp": self.mlp,
        }
        return pieces[function]

    def touches(self, function: str) -> bool:
        """Whether this way's ``function`` differs from the reference's."""
        if function == "gpt2_block":
            return self != REFERENCE
        return self.piece(function) is not REFERENCE.piece(function)

    def block(self, x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        ln1w, ln1b, w_qkv, b_qkv, w_ap, b_ap, ln2w, ln2b, w_fc, b_fc, w_mp, b_mp, n_head = params

        def attn(h: torch.Tensor) -> torch.Tensor:
            return self.attention(h, w_qkv, b_qkv, w_ap, b_ap, n_head)

        def mlp(h: torch.Tensor) -> torch.Tensor:
            return self.mlp(h, w_fc, b_fc, w_mp, b_mp)

        def ln_1(h: torch.Tensor) -> torch.Tensor:
            return self.layer_norm(h, ln1w, ln1b)

        def ln_2(h: torch.Tensor) -> torch.Tensor:
            return self.layer_norm(h, ln2w, ln2b)

        if self.wiring == "post-norm":
            x = ln_1(x + attn(x))
            return ln_2(x + mlp(x))
        if self.wiring == "parallel":
            return x + attn(ln_1(x)) + mlp(ln_2(x))
        if self.wiring == "normalised residual":
            x = ln_1(x)
            x = x + attn(x)
            x = ln_2(x)
            return x + mlp(x)
        x = x + attn(ln_1(x))
        return x + mlp(ln_2(x))


REFERENCE = Way()


def _erf_gelu(h: torch.Tensor) -> torch.Tensor:
    return F.gelu(h)


def _sigmoid_gelu(h: torch.Tensor) -> torch.Tensor:
    return h * torch.sigmoid(1.702 * h)


#: the usual slips, each with what the learner who made it should read
MISTAKES: tuple[tuple[str, Way], ...] = (
    (
        "you put the epsilon outside the square root (std + 1e-5); LayerNorm divides by "
        "sqrt(var + 1e-5). It only shows where a row's values barely vary, as here.",
        Way(layer_norm=partial(_slipped_layer_norm, eps_outside=True)),
    ),
    (
        "this is LayerNorm without the epsilon: divide by sqrt(var + 1e-5), not sqrt(var). "
        "It only shows where a row's values barely vary, as here (a constant row would "
        "divide by zero).",
        Way(layer_norm=partial(_slipped_layer_norm, eps=0.0)),
    ),
    (
        "you used the unbiased variance (dividing by C - 1, torch.var's default); LayerNorm "
        "uses the biased one: torch.var(..., unbiased=False), or the mean of the squared "
        "deviations.",
        Way(layer_norm=partial(_slipped_layer_norm, correction=1)),
    ),
    (
        "no causal mask: before the softmax, set every score where the key comes after the "
        "query to -inf.",
        Way(attention=partial(_slipped_attention, causal=False)),
    ),
    (
        "you divided the scores by head_dim; divide by its square root.",
        Way(attention=partial(_slipped_attention, divisor=lambda c, d: d)),
    ),
    (
        "you divided the scores by sqrt(n_embd); divide by sqrt(head_dim), with "
        "head_dim = n_embd // n_head.",
        Way(attention=partial(_slipped_attention, divisor=lambda c, d: math.sqrt(c))),
    ),
    (
        "you reshaped (B, T, C) straight to (B, n_head, T, D) without moving the head axis, "
        "so heads mix positions: view it as (B, T, n_head, D), then transpose(1, 2), and "
        "transpose back before merging.",
        Way(attention=partial(_slipped_attention, split_flat=True, merge_flat=True)),
    ),
    (
        "you merged the heads back by reshaping (B, n_head, T, D) straight to (B, T, C): "
        "transpose(1, 2) first, so each position's heads sit side by side.",
        Way(attention=partial(_slipped_attention, merge_flat=True)),
    ),
    (
        f"this is the erf GELU (nn.GELU's default); GPT-2 uses the tanh form {_TANH_GELU}.",
        Way(mlp=partial(_slipped_mlp, gelu=_erf_gelu)),
    ),
    (
        "this is the sigmoid approximation h * sigmoid(1.702 * h); GPT-2 uses the tanh form "
        f"{_TANH_GELU}.",
        Way(mlp=partial(_slipped_mlp, gelu=_sigmoid_gelu)),
    ),
    (
        "this is post-norm (a LayerNorm after each residual sum, as in the 2017 "
        "Transformer); GPT-2 is pre-norm: x = x + attn(ln_1(x)), then x = x + mlp(ln_2(x)).",
        Way(wiring="post-norm"),
    ),
    (
        "the attention and the MLP ran in parallel on the block's input; the MLP branch "
        "reads x after the attention's residual add: x = x + attn(ln_1(x)), then "
        "x = x + mlp(ln_2(x)).",
        Way(wiring="parallel"),
    ),
    (
        "the residual stream carries the normalised x: keep x itself and normalise only "
        "what goes into each branch, x = x + attn(ln_1(x)), then x = x + mlp(ln_2(x)).",
        Way(wiring="normalised residual"),
    ),
)
