"""Grader for training-path/manual-backward: the four parameter gradients of a two-layer
ReLU MLP under mean squared error, written by hand and checked against autograd.

The network, with the ``nn.Linear`` weight layout ``(out_features, in_features)``::

    h = relu(x @ w1.T + b1)        x (N, D), w1 (H, D), b1 (H,)
    y = h @ w2.T + b2              w2 (O, H), b2 (O,)
    loss = ((y - t) ** 2).mean()   t (N, O); the mean is over all N * O entries

Shapes are chosen so the usual slips show: ``H`` differs from ``D`` and from ``O`` (a
transposed weight gradient has the wrong shape), ``O`` is at least 2 (dividing by ``N``
instead of ``N * O`` gives wrong values), and about half the pre-activations are
negative (a missing ReLU mask is wrong on most entries).  The expected gradients come
from ``torch.autograd`` in float64; the learner's code may not touch autograd at all.
"""

from __future__ import annotations

from functools import partial
from types import MappingProxyType

import torch

from graders.cases import CaseGrader
from graders.comparison import Case
from graders.draws import draw_int, draw_normal
from graders.tensors import dtype_name

GRADIENTS = ("grad_w2", "grad_b2", "grad_w1", "grad_b1")  # backprop order: output first
AUTOGRAD_NAMES = frozenset(
    {"backward", "grad", "autograd", "vjp", "jvp", "jacobian", "hessian", "jacrev", "jacfwd"}
    | {"hvp", "vhp", "requires_grad", "requires_grad_", "functional_call", "enable_grad"}
    | {"set_grad_enabled", "gradcheck"}
)
#: dtype -> (rtol, atol); gradients here are of order 0.01 to 1
TOLERANCES = {torch.float64: (1e-9, 1e-12), torch.float32: (1e-4, 1e-6)}

FORBIDDEN = MappingProxyType(dict.fromkeys(GRADIENTS, AUTOGRAD_NAMES))
HINTS = MappingProxyType(
    {
        "grad_w2": (
            "dloss/dw2 = dy.T @ h, shape (O, H) like w2, with h the ReLU output and "
            "dy = 2 * (y - t) / y.numel(): the mean runs over all N * O entries of y, so "
            "divide by y.numel(), not the batch size."
        ),
        "grad_b2": "dy summed over the batch, shape (O,), with dy = 2 * (y - t) / y.numel().",
        "grad_w1": (
            "dz.T @ x, shape (H, D) like w1. Back through the second layer, dh = dy @ w2, "
            "then through the ReLU: dz is dh with zeros wherever the pre-activation "
            "x @ w1.T + b1 was negative."
        ),
        "grad_b1": (
            "dz summed over the batch, shape (H,), where dz is dy @ w2 with zeros wherever "
            "the pre-activation x @ w1.T + b1 was negative."
        ),
    }
)


class MlpBackward(CaseGrader):
    name = "mlp_backward"
    interface = GRADIENTS
    forbidden = FORBIDDEN
    forbidden_what = "autograd machinery; derive the gradients yourself"
    hints = HINTS
    passed_feedback = (
        "All four gradients match autograd. Each is a small matrix product: the gradient "
        "flowing back, times whatever the weight multiplied on the way forward. That is all "
        "a backward pass is, and why it costs about twice the FLOPs of the forward pass: two "
        "products per layer (one for the weight, one to pass on) where the forward had one."
    )

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        dtypes = (torch.float64, torch.float64, torch.float64, torch.float32)
        inputs = [_inputs(gen, dtype) for dtype in dtypes]
        grads = [reference_gradients(*args) for args in inputs]
        return [
            _case(function, args, expected[function])
            for function in GRADIENTS
            for args, expected in zip(inputs, grads, strict=True)
        ]


def _inputs(gen: torch.Generator, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    n, d = draw_int(gen, 2, 8), draw_int(gen, 3, 6)
    h, o = d + draw_int(gen, 2, 5), draw_int(gen, 2, 3)
    randn = partial(draw_normal, gen, dtype=dtype)
    return randn(n, d), randn(h, d), randn(h), randn(o, h), randn(o), randn(n, o)


def _case(function: str, args: tuple[torch.Tensor, ...], expected: torch.Tensor) -> Case:
    x, w1, _, w2, _, _ = args
    label = f"{dtype_name(x.dtype)}, x {tuple(x.shape)}, w1 {tuple(w1.shape)}, w2 {tuple(w2.shape)}"
    rtol, atol = TOLERANCES[x.dtype]
    return Case(function, args, expected.to(x.dtype), label, rtol=rtol, atol=atol)


def reference_gradients(*args: torch.Tensor) -> dict[str, torch.Tensor]:
    """Autograd's gradients, in float64 whatever the inputs' dtype."""
    x, w1, b1, w2, b2, t = (a.detach().double() for a in args)
    params = [p.requires_grad_() for p in (w1, b1, w2, b2)]
    with torch.enable_grad():
        y = torch.relu(x @ w1.T + b1) @ w2.T + b2
        loss = ((y - t) ** 2).mean()
        grads = torch.autograd.grad(loss, params)
    return dict(zip(("grad_w1", "grad_b1", "grad_w2", "grad_b2"), grads, strict=True))
