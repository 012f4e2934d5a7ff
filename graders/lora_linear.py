"""Grader for training-path/lora-linear: a linear layer with a LoRA adapter, and the
same adapter merged into the frozen weight.

Convention (the LoRA paper's, also the PEFT library's): rank ``r = a.shape[0]``,
``a`` is ``(r, in)``, ``b_lora`` is ``(out, r)``, and the update is scaled by
``alpha / r``::

    y = x @ w.T + b + (alpha / r) * (x @ a.T) @ b_lora.T
    merged = w + (alpha / r) * b_lora @ a

``alpha`` arrives as a 0-d tensor.  ``alpha / r`` is never 1 or ``alpha`` in these
cases, so a missing or wrong scaling shows; ``w`` is never square, so a transposed or
swapped factor fails on its shape; and one case starts from ``b_lora = 0``, the state
training begins in, where the layer must equal the base layer exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from types import MappingProxyType

import torch

from graders.cases import CaseGrader
from graders.comparison import Case
from graders.draws import draw_int, draw_normal
from graders.tensors import dtype_name

LINEAR_NAMES = frozenset({"linear", "Linear", "addmm"})
ALPHAS = (2.0, 8.0, 16.0, 32.0)
#: dtype -> (rtol, atol)
TOLERANCES = {torch.float64: (1e-10, 1e-12), torch.float32: (1e-5, 1e-5)}

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
    name = "lora_linear"
    interface = ("lora_linear", "merge_lora")
    forbidden = FORBIDDEN
    forbidden_what = "a library layer; write the products with @"
    hints = HINTS
    passed_feedback = (
        "Both match. Only a and b_lora train: r * (in + out) numbers per adapted matrix "
        "instead of in * out. Merging folds the update into w, so a fine-tuned model serves "
        "at exactly the base model's cost, and you can keep one small adapter per task."
    )

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        dtypes = (torch.float32, torch.float32, torch.float32, torch.float64)
        layers = [_layer(gen, dtype, at_init=i == 0) for i, dtype in enumerate(dtypes)]
        cases = [_case(layer, "lora_linear") for layer in layers]
        return cases + [_case(layer, "merge_lora") for layer in layers]


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
    """The expected result in float64, returned in the inputs' dtype."""
    x, w, b, a, b_lora = (t.double() for t in (layer.x, layer.w, layer.b, layer.a, layer.b_lora))
    scale = layer.alpha.double() / a.shape[0]
    dtype = layer.x.dtype
    rtol, atol = TOLERANCES[dtype]
    if function == "lora_linear":
        args = (layer.x, layer.w, layer.b, layer.a, layer.b_lora, layer.alpha)
        expected = x @ w.T + b + scale * (x @ a.T) @ b_lora.T
    else:
        args = (layer.w, layer.a, layer.b_lora, layer.alpha)
        expected = w + scale * b_lora @ a
    return Case(function, args, expected.to(dtype), layer.label, rtol=rtol, atol=atol)


def _layer(gen: torch.Generator, dtype: torch.dtype, at_init: bool) -> Layer:
    """x is (N, in) or (B, T, in); ``b_lora`` is zero when ``at_init``, as LoRA starts."""
    d_in, r = draw_int(gen, 6, 12), draw_int(gen, 2, 4)
    d_out = d_in + draw_int(gen, 1, 3) * (1 if draw_int(gen, 0, 1) else -1)  # never square
    alpha = ALPHAS[draw_int(gen, 0, len(ALPHAS) - 1)]
    if alpha == r:
        alpha *= 2
    lead = (draw_int(gen, 2, 6),) if draw_int(gen, 0, 1) else (2, draw_int(gen, 2, 4))
    randn = partial(draw_normal, gen, dtype=dtype)
    b_lora = torch.zeros(d_out, r, dtype=dtype) if at_init else randn(d_out, r)
    alpha_t = torch.tensor(alpha, dtype=dtype)
    name = dtype_name(dtype)
    label = f"{name}, x {(*lead, d_in)}, w ({d_out}, {d_in}), rank {r}, alpha {alpha:g}"
    if at_init:
        label += ", b_lora all zero as at the start of training"
    x = randn(*lead, d_in)
    return Layer(x, randn(d_out, d_in), randn(d_out), randn(r, d_in), b_lora, alpha_t, label)
