"""Grader for forward-pass/gpt2-block: LayerNorm, causal self-attention, the MLP and the
whole pre-norm GPT-2 block, each checked against torch's own ops run in float64.

Weights follow the ``nn.Linear`` convention, ``(out_features, in_features)`` with
``y = x @ W.T + b``, so the learner has to transpose GPT-2's Conv1D checkpoints once,
at load time, and never inside the block.  ``n_head`` travels as a 0-d int64 tensor
because sandbox calls take tensors only.

Configs are small (n_embd 16..48, 2 or 4 heads, up to 10 positions) so a CPU grades
them in milliseconds; weights are scaled so every activation is of order one, which
keeps attention non-uniform and a wrong GELU or variance visible at float32 tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from types import MappingProxyType

import torch
import torch.nn.functional as F

from graders.cases import CaseGrader
from graders.comparison import Case
from graders.draws import draw_int

EPS = 1e-5
RTOL = 3e-5
ATOL = 3e-5

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
    name = "gpt2_block"
    interface = (
        "layer_norm",
        "causal_self_attention",
        "mlp",
        "gpt2_block",
    )
    forbidden = FORBIDDEN
    forbidden_what = "a library version of a piece this task asks you to write"
    hints = HINTS
    passed_feedback = (
        "All four match. That is every computation inside GPT-2 except the embeddings at the "
        "start and the final LayerNorm and unembedding at the end. Next, load layer 0 of the "
        "real GPT-2 weights (transpose each Conv1D weight first) and check your block "
        "reproduces Hugging Face's hidden state after layer 0."
    )

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Four configs, each a case for every function; the first has a single position,
        where the causal mask changes nothing."""
        cases: list[Case] = []
        for i in range(4):
            config = _config(gen, seq=1 if i == 0 else None)
            params = _params(gen, config.n_embd)
            cases += _function_cases(gen, config, params, i)
        return sorted(cases, key=lambda c: self.interface.index(c.function))


def _function_cases(gen: torch.Generator, config: Config, p: Params, i: int) -> list[Case]:
    """One case per function; the block gets the same input and weights as its pieces."""
    shape = (config.batch, config.seq, config.n_embd)
    x = _randn(gen, shape)
    # LayerNorm must remove an offset and a scale: give its input both.
    shifted = x * 3.0 + _randn(gen, (config.n_embd,)) * 2.0
    norm_label = config.label
    if i == 1:  # any leading dimensions: a 2-D input too
        shifted = shifted[0]
        norm_label = f"2-D input of shape {tuple(shifted.shape)}"
    n_head = torch.tensor(config.n_head, dtype=torch.int64)
    label = config.label
    return [
        _case("layer_norm", (shifted, p.ln_1_weight, p.ln_1_bias), _ref_layer_norm, norm_label),
        _case(
            "causal_self_attention",
            (x, p.w_qkv, p.b_qkv, p.w_attn_proj, p.b_attn_proj, n_head),
            _ref_attention,
            label,
        ),
        _case("mlp", (x, p.w_fc, p.b_fc, p.w_mlp_proj, p.b_mlp_proj), _ref_mlp, label),
        _case("gpt2_block", (x, *p.ordered(), n_head), _ref_block, label),
    ]


def _case(
    function: str,
    args: tuple[torch.Tensor, ...],
    reference: Callable[..., torch.Tensor],
    label: str,
) -> Case:
    """The reference runs in float64 on float64 copies; the learner gets float32."""
    wide = tuple(a.double() if a.is_floating_point() else a for a in args)
    expected = reference(*wide).to(torch.float32)
    return Case(function, args, expected, label, rtol=RTOL, atol=ATOL)


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


def _randn(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randn(shape, generator=gen, dtype=torch.float32)


# -- the trusted reference: torch's own ops in float64 ------------------------------------


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


def _ref_block(x: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    (ln1w, ln1b, w_qkv, b_qkv, w_ap, b_ap, ln2w, ln2b, w_fc, b_fc, w_mp, b_mp, n_head) = args
    x = x + _ref_attention(_ref_layer_norm(x, ln1w, ln1b), w_qkv, b_qkv, w_ap, b_ap, n_head)
    return x + _ref_mlp(_ref_layer_norm(x, ln2w, ln2b), w_fc, b_fc, w_mp, b_mp)
