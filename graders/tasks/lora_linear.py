"""Grader for training-path/lora-linear: a linear layer with a LoRA adapter, and the
same adapter merged into the frozen weight.

Convention (the LoRA paper's, also the PEFT library's): rank ``r = a.shape[0]``,
``a`` is ``(r, in)``, ``b_lora`` is ``(out, r)``, and the update is scaled by
``alpha / r``::

    y = x @ w.T + b + (alpha / r) * (x @ a.T) @ b_lora.T
    merged = w + (alpha / r) * b_lora @ a

``alpha`` arrives as a 0-d tensor.  ``alpha / r`` is never 1 or ``alpha`` in these
cases, so a missing or wrong scaling shows; drawn layers are never square, so a
transposed or swapped factor fails on its shape, and the fixed cases add a square one
where it gives wrong numbers instead, so the feedback can name it.  One case starts from
``b_lora = 0``, the state training begins in, where the layer must equal the base layer.

Rounding is judged against the size of the terms summed (``|x| @ |w|.T + |b| + ...``),
not the result: computing through the merged weight is as right as the two products,
though where the sum nearly cancels the two round differently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from types import MappingProxyType

import torch

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.declaration import Declaration
from graders.draws import draw_int, draw_normal
from graders.tensors import dtype_name

DECLARATION = Declaration(
    functions=(
        "lora_linear(x, w, b, a, b_lora, alpha) -> Tensor",
        "merge_lora(w, a, b_lora, alpha) -> Tensor",
    ),
)

LINEAR_NAMES = frozenset({"linear", "Linear", "addmm"})
ALPHAS = (2.0, 8.0, 16.0, 32.0)
#: dtype -> how far an entry may be from the float64 reference, relative to the size of
#: the terms it sums (the layer on absolute values) plus the largest such size in the
#: case, so a sum that nearly cancels is held to what its terms allow
TOLERANCES = {torch.float64: 1e-12, torch.float32: 1e-5}
FIXED_SEED = 20261201

FORBIDDEN = MappingProxyType({"lora_linear": LINEAR_NAMES})
HINTS = MappingProxyType(
    {
        "lora_linear": (
            "y = x @ w.T + b + (alpha / r) * (x @ a.T) @ b_lora.T with r = a.shape[0]: the "
            "base layer plus the low-rank path, scaled by alpha / r (not by alpha alone)."
        ),
        "merge_lora": (
            "w + (alpha / r) * b_lora @ a, shape (out, in) like w: then x @ merged.T + b "
            "gives exactly what lora_linear gives."
        ),
    }
)


class LoraLinear(CaseGrader):
    declaration = DECLARATION
    forbidden = FORBIDDEN
    forbidden_what = "a library layer; write the products with @"
    hints = HINTS
    passed_feedback = (
        "Both match. Only a and b_lora train: r * (in + out) numbers per adapted matrix "
        "instead of in * out. Merging folds the update into w, so a fine-tuned model serves "
        "at exactly the base model's cost, and you can keep one small adapter per task."
    )

    def fixed_cases(self, device: str) -> list[Case]:
        """A square layer (8 by 8, rank 3, alpha 16), where swapped or transposed factors
        give wrong numbers rather than a shape error, and a tall one (10 by 7, rank 2,
        alpha 8) with a (B, T, in) input, both in float32: every listed slip changes
        every output here."""
        gen = torch.Generator().manual_seed(FIXED_SEED)
        layers = [
            _layer(gen, torch.float32, (4,), 8, 8, 3, 16.0),
            _layer(gen, torch.float32, (2, 3), 7, 10, 2, 8.0),
        ]
        cases = [_case(layer, f) for f in self.interface for layer in layers]
        return [replace(c, drawn=False) for c in cases]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        dtypes = (torch.float32, torch.float32, torch.float32, torch.float64)
        layers = [_drawn_layer(gen, dtype, at_init=i == 0) for i, dtype in enumerate(dtypes)]
        return [_case(layer, f) for f in self.interface for layer in layers]


@dataclass(frozen=True)
class Layer:
    """One frozen layer with its adapter, and an input for it."""

    x: torch.Tensor
    w: torch.Tensor
    b: torch.Tensor
    a: torch.Tensor
    b_lora: torch.Tensor
    alpha: torch.Tensor  # 0-d, the inputs' dtype
    label: str


def _case(layer: Layer, function: str) -> Case:
    """The expected result and every slip's in float64, returned in the inputs' dtype."""
    dtype = layer.x.dtype
    x, w, b, a, b_lora, alpha = (
        t.double() for t in (layer.x, layer.w, layer.b, layer.a, layer.b_lora, layer.alpha)
    )
    rtol = TOLERANCES[dtype]
    if function == "lora_linear":
        args = (layer.x, layer.w, layer.b, layer.a, layer.b_lora, layer.alpha)
        wide = (x, w, b, a, b_lora, alpha)
        scale = _linear(x.abs(), w.abs(), b.abs(), a.abs(), b_lora.abs(), alpha)
        slips = LINEAR_MISTAKES
    else:
        args = (layer.w, layer.a, layer.b_lora, layer.alpha)
        wide = (w, a, b_lora, alpha)
        scale = _merge(w.abs(), a.abs(), b_lora.abs(), alpha)
        slips = MERGE_MISTAKES
    expected = (_linear if function == "lora_linear" else _merge)(*wide)
    mistakes = tuple(_mistake(why, slip, wide, dtype) for why, slip in slips)
    return Case(
        function,
        args,
        expected.to(dtype),
        layer.label,
        rtol=rtol,
        atol=rtol * float(scale.max()),
        mistakes=tuple(m for m in mistakes if m is not None),
        scale=scale,
    )


def _mistake(
    why: str, slip: Callable[..., torch.Tensor], wide: tuple[torch.Tensor, ...], dtype: torch.dtype
) -> Mistake | None:
    """What ``slip`` returns here, or None where its shapes do not fit (it raises)."""
    try:
        return Mistake(slip(*wide).to(dtype), why)
    except RuntimeError:
        return None


def _drawn_layer(gen: torch.Generator, dtype: torch.dtype, at_init: bool) -> Layer:
    """x is (N, in) or (B, T, in); ``b_lora`` is zero when ``at_init``, as LoRA starts."""
    d_in, r = draw_int(gen, 6, 12), draw_int(gen, 2, 4)
    d_out = d_in + draw_int(gen, 1, 3) * (1 if draw_int(gen, 0, 1) else -1)  # never square
    alpha = ALPHAS[draw_int(gen, 0, len(ALPHAS) - 1)]
    if alpha == r:
        alpha *= 2
    lead = (draw_int(gen, 2, 6),) if draw_int(gen, 0, 1) else (2, draw_int(gen, 2, 4))
    return _layer(gen, dtype, lead, d_in, d_out, r, alpha, at_init=at_init)


def _layer(
    gen: torch.Generator,
    dtype: torch.dtype,
    lead: tuple[int, ...],
    d_in: int,
    d_out: int,
    r: int,
    alpha: float,
    *,
    at_init: bool = False,
) -> Layer:
    randn = partial(draw_normal, gen, dtype=dtype)
    b_lora = torch.zeros(d_out, r, dtype=dtype) if at_init else randn(d_out, r)
    alpha_t = torch.tensor(alpha, dtype=dtype)
    name = dtype_name(dtype)
    label = f"{name}, x {(*lead, d_in)}, w ({d_out}, {d_in}), rank {r}, alpha {alpha:g}"
    if at_init:
        label += ", b_lora all zero as at the start of training"
    x = randn(*lead, d_in)
    return Layer(x, randn(d_out, d_in), randn(d_out), randn(r, d_in), b_lora, alpha_t, label)


# -- the reference and the usual slips, in float64 ----------------------------------------


def _linear(
    x: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor,
    a: torch.Tensor,
    b_lora: torch.Tensor,
    alpha: torch.Tensor,
    *,
    rank: Callable[[torch.Tensor], int] = lambda a: a.shape[0],
    scaled: Callable[[torch.Tensor, int], torch.Tensor] = lambda alpha, r: alpha / r,
    with_bias: bool = True,
) -> torch.Tensor:
    """The layer, with the knobs the usual slips turn: where the rank is read, how the
    scale is made from alpha and r, whether the base bias is added."""
    base = x @ w.T + (b if with_bias else 0)
    return base + scaled(alpha, rank(a)) * ((x @ a.T) @ b_lora.T)


def _merge(
    w: torch.Tensor,
    a: torch.Tensor,
    b_lora: torch.Tensor,
    alpha: torch.Tensor,
    *,
    scaled: Callable[[torch.Tensor, int], torch.Tensor] = lambda alpha, r: alpha / r,
) -> torch.Tensor:
    return w + scaled(alpha, a.shape[0]) * (b_lora @ a)


def _b_lora_first(
    x: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor,
    a: torch.Tensor,
    b_lora: torch.Tensor,
    alpha: torch.Tensor,
) -> torch.Tensor:
    return x @ w.T + b + alpha / a.shape[0] * ((x @ b_lora) @ a)


def _merged_transposed(
    w: torch.Tensor, a: torch.Tensor, b_lora: torch.Tensor, alpha: torch.Tensor
) -> torch.Tensor:
    return w + alpha / a.shape[0] * (a.T @ b_lora.T)


_BY_ALPHA = (
    "the update was scaled by alpha; LoRA scales it by alpha / r, with r = a.shape[0] "
    "(not by alpha alone)."
)
_UNSCALED = "this is the update without the alpha / r scaling: multiply it by alpha / r."
LINEAR_MISTAKES: tuple[tuple[str, Callable[..., torch.Tensor]], ...] = (
    (_BY_ALPHA, partial(_linear, scaled=lambda alpha, r: alpha)),
    (_UNSCALED, partial(_linear, scaled=lambda alpha, r: 1.0)),
    (
        "the rank was read from a.shape[1] (the input width); r is a.shape[0], since a is (r, in).",
        partial(_linear, rank=lambda a: a.shape[1]),
    ),
    (
        "the base bias b is missing: y = x @ w.T + b + the scaled low-rank path.",
        partial(_linear, with_bias=False),
    ),
    (
        "you applied b_lora first, as if it were the down-projection: a (r, in) maps x "
        "down to r features, then b_lora (out, r) maps them up: (x @ a.T) @ b_lora.T.",
        _b_lora_first,
    ),
)
MERGE_MISTAKES: tuple[tuple[str, Callable[..., torch.Tensor]], ...] = (
    (_BY_ALPHA, partial(_merge, scaled=lambda alpha, r: alpha)),
    (_UNSCALED, partial(_merge, scaled=lambda alpha, r: 1.0)),
    (
        "the update is transposed: a.T @ b_lora.T is (in, out); the update is b_lora @ a, "
        "shaped (out, in) like w.",
        _merged_transposed,
    ),
)
