"""Grader for training-path/manual-backward: the four parameter gradients of a two-layer
ReLU MLP under mean squared error, written by hand and checked against autograd.

The network, with the ``nn.Linear`` weight layout ``(out_features, in_features)``::

    h = relu(x @ w1.T + b1)        x (N, D), w1 (H, D), b1 (H,)
    y = h @ w2.T + b2              w2 (O, H), b2 (O,)
    loss = ((y - t) ** 2).mean()   t (N, O); the mean is over all N * O entries

Shapes are chosen so the usual slips show: ``H`` differs from ``D`` and from ``O`` (a
transposed weight gradient has the wrong shape), ``N`` and ``O`` are at least 2
(dividing by ``N`` instead of ``N * O``, or averaging a bias gradient, gives wrong
values), and about half the pre-activations are negative (a missing ReLU mask is wrong
on most entries), none of them so close to zero that float32 rounding could flip the
mask.  The expected gradients come from ``torch.autograd`` in float64; the learner's
code may not touch autograd at all.  Each case carries what the usual slips return, so
a failure names its cause.
"""

from __future__ import annotations

from dataclasses import replace
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
        "grad_w2(x, w1, b1, w2, b2, t) -> Tensor",
        "grad_b2(x, w1, b1, w2, b2, t) -> Tensor",
        "grad_w1(x, w1, b1, w2, b2, t) -> Tensor",
        "grad_b1(x, w1, b1, w2, b2, t) -> Tensor",
    ),
)

GRADIENTS = DECLARATION.interface  # backprop order: output first
AUTOGRAD_NAMES = frozenset(
    {"backward", "grad", "autograd", "vjp", "jvp", "jacobian", "hessian", "jacrev", "jacfwd"}
    | {"hvp", "vhp", "requires_grad", "requires_grad_", "functional_call", "enable_grad"}
    | {"set_grad_enabled", "gradcheck"}
)
#: dtype -> how far an entry may be from autograd's float64 gradient, relative to the size
#: of the terms it sums (``magnitudes``) plus the largest such size in the gradient: an
#: entry can cancel to almost nothing while its rounding stays that of its terms
TOLERANCES = {torch.float64: 1e-12, torch.float32: 1e-5}
#: no pre-activation lies closer to zero than this, so rounding cannot flip the ReLU mask
MASK_MARGIN = 1e-3
FIXED_SEED = 20261201

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

Gradients = dict[str, torch.Tensor]


class MlpBackward(CaseGrader):
    declaration = DECLARATION
    forbidden = FORBIDDEN
    forbidden_what = "autograd machinery; derive the gradients yourself"
    hints = HINTS
    passed_feedback = (
        "All four gradients match autograd. Each is a small matrix product: the gradient "
        "flowing back, times whatever the weight multiplied on the way forward. That is all "
        "a backward pass is, and why it costs about twice the FLOPs of the forward pass: two "
        "products per layer (one for the weight, one to pass on) where the forward had one."
    )

    def fixed_cases(self, device: str) -> list[Case]:
        """One network in each dtype with N = 4, D = 3, H = 5, O = 2: every listed slip
        changes every gradient it touches here."""
        gen = torch.Generator().manual_seed(FIXED_SEED)
        shape = (4, 3, 5, 2)
        cases = _cases([_inputs(gen, dtype, shape) for dtype in (torch.float64, torch.float32)])
        return [replace(c, drawn=False) for c in cases]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        dtypes = (torch.float64, torch.float64, torch.float64, torch.float32)
        return _cases([_inputs(gen, dtype, _shape(gen)) for dtype in dtypes])


def _shape(gen: torch.Generator) -> tuple[int, int, int, int]:
    """(N, D, H, O) with H > D and H > O, so transposed gradients have the wrong shape."""
    n, d = draw_int(gen, 2, 8), draw_int(gen, 3, 6)
    return n, d, d + draw_int(gen, 2, 5), draw_int(gen, 2, 3)


def _inputs(
    gen: torch.Generator, dtype: torch.dtype, shape: tuple[int, int, int, int]
) -> tuple[torch.Tensor, ...]:
    """Inputs whose pre-activations all keep MASK_MARGIN away from zero (redrawn if not)."""
    n, d, h, o = shape
    randn = partial(draw_normal, gen, dtype=dtype)
    while True:
        x, w1, b1 = randn(n, d), randn(h, d), randn(h)
        if bool(((x.double() @ w1.double().T + b1.double()).abs() >= MASK_MARGIN).all()):
            return x, w1, b1, randn(o, h), randn(o), randn(n, o)


def _cases(inputs: list[tuple[torch.Tensor, ...]]) -> list[Case]:
    """Every gradient for every network, in backprop order, each with its slips."""
    computed = [
        (args, reference_gradients(*args), magnitudes(*args), _mistaken(args)) for args in inputs
    ]
    return [
        _case(function, args, expected[function], scale[function], mistakes)
        for function in GRADIENTS
        for args, expected, scale, mistakes in computed
    ]


def _case(
    function: str,
    args: tuple[torch.Tensor, ...],
    expected: torch.Tensor,
    scale: torch.Tensor,
    mistakes: list[tuple[str, Gradients]],
) -> Case:
    x, w1, _, w2, _, _ = args
    label = f"{dtype_name(x.dtype)}, x {tuple(x.shape)}, w1 {tuple(w1.shape)}, w2 {tuple(w2.shape)}"
    rtol = TOLERANCES[x.dtype]
    known = tuple(
        Mistake(wrong[function].to(x.dtype), why) for why, wrong in mistakes if function in wrong
    )
    return Case(
        function,
        args,
        expected.to(x.dtype),
        label,
        rtol=rtol,
        atol=rtol * float(scale.max()),
        mistakes=known,
        scale=scale,
    )


def reference_gradients(*args: torch.Tensor) -> Gradients:
    """Autograd's gradients, in float64 whatever the inputs' dtype."""
    x, w1, b1, w2, b2, t = (a.detach().double() for a in args)
    params = [p.requires_grad_() for p in (w1, b1, w2, b2)]
    with torch.enable_grad():
        y = torch.relu(x @ w1.T + b1) @ w2.T + b2
        loss = ((y - t) ** 2).mean()
        grads = torch.autograd.grad(loss, params)
    return dict(zip(("grad_w1", "grad_b1", "grad_w2", "grad_b2"), grads, strict=True))


def magnitudes(*args: torch.Tensor) -> Gradients:
    """How large the terms summed into each gradient entry are: the backward pass on
    absolute values (``|dy|.T @ |h|`` for ``grad_w2``, and so on), with ``|y| + |t|``
    for ``y - t``.  Rounding error is a small multiple of these, however much the
    terms cancel."""
    x, w1, b1, w2, b2, t = (a.double().abs() for a in args)
    active = (args[0].double() @ args[1].double().T + args[2].double()) > 0
    h = (x @ w1.T + b1) * active
    dy = 2 * (h @ w2.T + b2 + t) / t.numel()
    dz = (dy @ w2) * active
    return {"grad_w2": dy.T @ h, "grad_b2": dy.sum(0), "grad_w1": dz.T @ x, "grad_b1": dz.sum(0)}


# -- the usual slips, by hand in float64 --------------------------------------------------


def _by_hand(
    args: tuple[torch.Tensor, ...],
    *,
    batch_mean: bool = False,
    factor: float = 2.0,
    flipped: bool = False,
    mask: bool = True,
    w2_from_z: bool = False,
    bias_mean: bool = False,
) -> Gradients:
    """The backward pass written out, with the knobs the usual slips turn."""
    x, w1, b1, w2, b2, t = (a.double() for a in args)
    z = x @ w1.T + b1
    h = z.relu()
    y = h @ w2.T + b2
    dy = factor * ((t - y) if flipped else (y - t)) / (y.shape[0] if batch_mean else y.numel())
    dz = dy @ w2 * (z > 0) if mask else dy @ w2
    reduce = torch.mean if bias_mean else torch.sum
    return {
        "grad_w2": dy.T @ (z if w2_from_z else h),
        "grad_b2": reduce(dy, dim=0),
        "grad_w1": dz.T @ x,
        "grad_b1": reduce(dz, dim=0),
    }


def _transposed_w2(args: tuple[torch.Tensor, ...]) -> Gradients:
    return {"grad_w2": _by_hand(args)["grad_w2"].T}


def _only(names: tuple[str, ...], gradients: Gradients) -> Gradients:
    return {name: gradients[name] for name in names}


def _mistaken(args: tuple[torch.Tensor, ...]) -> list[tuple[str, Gradients]]:
    """Each usual slip's explanation with the gradients it gives (only those it changes)."""
    biases = ("grad_b2", "grad_b1")
    return [
        (
            "dloss/dy was divided by N, the batch size; the mean runs over all N * O entries "
            "of y, so dy = 2 * (y - t) / y.numel(): divide by y.numel(), not the batch size.",
            _by_hand(args, batch_mean=True),
        ),
        (
            "the factor 2 from the square is missing: dloss/dy = 2 * (y - t) / y.numel().",
            _by_hand(args, factor=1.0),
        ),
        (
            "the sign is flipped: dloss/dy = 2 * (y - t) / y.numel(), with y - t, not t - y.",
            _by_hand(args, flipped=True),
        ),
        (
            "the gradient skips the ReLU: dz is dy @ w2 with zeros wherever the "
            "pre-activation x @ w1.T + b1 was negative.",
            _only(("grad_w1", "grad_b1"), _by_hand(args, mask=False)),
        ),
        (
            "grad_w2 came out transposed, (H, O) instead of w2's (O, H): dy.T @ h, not h.T @ dy.",
            _transposed_w2(args),
        ),
        (
            "grad_w2 used the pre-activation x @ w1.T + b1; the second layer multiplied the "
            "ReLU's output h, so grad_w2 = dy.T @ h.",
            _only(("grad_w2",), _by_hand(args, w2_from_z=True)),
        ),
        (
            "the bias gradient was averaged over the batch; the bias touched every row and "
            "each row's loss counts in full, so sum it over the batch: dy.sum(0), dz.sum(0).",
            _only(biases, _by_hand(args, bias_mean=True)),
        ),
    ]
