"""Grader for inference-engine/int8-weights: symmetric, per-output-channel, weight-only
int8 quantization, and the linear layer that reads it.

Three functions, each returning one tensor, so the issue's ``quantize(w) -> (q, scale)``
is split in two::

    weight_scales(w)             -> float32 (out,)   max|w[r]| / 127; an all-zero row: 1.0
    quantize(w, scale)           -> int8 (out, in)   clamp(round(w / scale[:, None]), -127, 127)
    int8_linear(x, q, scale, b)  -> float32 (..., out)  x @ (q * scale[:, None]).T + b

``quantize`` is given the scale, so a wrong scale formula fails ``weight_scales`` alone, and
some rows get a scale smaller than their own (a clipped scale), so the clamp shows.  Its
inputs are built from the integers they must give: each ``w / scale`` is either exactly
``k + 0.5`` (the row's scale a power of two, so every way of dividing is exact) or about 0.1
or more from any half-integer, so float64 division or a multiplication by ``1 / scale``
gives the same integers, while rounding half away from zero or half up cannot pass.
``int8_linear`` is
held to twice the worst-case float32 rounding of its dot products (``(in + 2) · 2⁻²³`` times
the product on absolute values), so any order of summing passes; ``in`` reaches 2048.

Every verdict that ran the functions notes the bytes a decode step reads, in float32, bf16
and int8 with its scales, for the largest layer graded and for Llama 2 7B (the quest's
model): a fact of the shapes, computed here, never a timing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import torch

from graders.base import Plan, Verdict
from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.declaration import Declaration
from graders.draws import draw_int, draw_normal
from sandbox.api import SandboxResult

DECLARATION = Declaration(
    functions=(
        "weight_scales(w) -> Tensor",
        "quantize(w, scale) -> Tensor",
        "int8_linear(x, q, scale, bias) -> Tensor",
    ),
)

QMAX = 127
#: weight_scales is compared within this relative error: float32 division by 127, a
#: multiplication by 1/127 or float64 arithmetic all land within a unit in the last place
SCALE_RTOL = 1e-6
#: int8_linear: twice the first-order worst case of float32 rounding, per unit of in + 2
#: (in products summed in any order, the dequantizing product and the bias)
LINEAR_RTOL_PER_TERM = 2.0**-23
#: a non-tie w / scale is drawn at least this far from any half-integer (less a few units
#: of float32 rounding: the prompt promises more than 0.05)
TIE_MARGIN = 0.1
FIXED_SEED = 20270108

#: torch's own quantization: tensors, observers and int8 kernels do the lesson for you
LIBRARY_QUANTIZATION = frozenset(
    {"quantize_per_channel", "quantize_per_tensor", "int_repr", "dequantize", "qint8"}
    | {"fake_quantize_per_channel_affine", "fake_quantize_per_tensor_affine"}
    | {"_weight_int8pack_mm", "_int_mm", "ao", "quantization", "quantized"}
)
FORBIDDEN = MappingProxyType(dict.fromkeys(DECLARATION.interface, LIBRARY_QUANTIZATION))
HINTS = MappingProxyType(
    {
        "weight_scales": (
            "scale[r] = w[r].abs().max() / 127, one float32 per output row, shape (out,); "
            "where that is 0 (an all-zero row) the scale is 1.0."
        ),
        "quantize": (
            "q = torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8): divide "
            "each row by its own scale, round half to even, clamp symmetrically, int8."
        ),
        "int8_linear": (
            "x @ (q.float() * scale[:, None]).T + bias: q back to float32, each output row "
            "times its scale, then the bias; shape (..., out), float32."
        ),
    }
)
NONFINITE = (
    "your result has nan or inf where every answer is finite: a scale of 0 (an all-zero "
    "row) turns 0 / 0 into nan. An all-zero row's scale is 1.0."
)
PASSED_FEEDBACK = (
    "All three match. A weight now takes 1 byte instead of 2 (bf16) or 4 (float32), plus "
    "one float32 scale per output row, and rounding moves it by at most half its row's "
    "scale. A decode step reads every weight once, so it reads about half the bytes of "
    "bf16 and its bandwidth ceiling nearly doubles; where the batch is large enough to be "
    "compute-bound, weight-only int8 saves memory but no time, since the matmul still runs "
    "in float."
)

# -- the reference, in float64 where it is arithmetic, in float32 where the rule says so ----


def reference_scales(w: torch.Tensor) -> torch.Tensor:
    """max|w[r]| / 127 per row, 1.0 for an all-zero row: float32 ``(out,)``."""
    largest = w.double().abs().amax(dim=1)
    return torch.where(largest == 0, 1.0, largest / QMAX).float()


def reference_quantize(w: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """clamp(round(w / scale), -127, 127) per row, divided in float32, half to even."""
    return torch.round(w.float() / scale.float()[:, None]).clamp(-QMAX, QMAX).to(torch.int8)


def reference_linear(
    x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor
) -> torch.Tensor:
    """x @ (q * scale[:, None]).T + bias, in float64."""
    return x.double() @ (q.double() * scale.double()[:, None]).T + bias.double()


# -- the usual slips -------------------------------------------------------------------------


def _or_one(largest: torch.Tensor, divisor: float) -> torch.Tensor:
    """A scale formula with the all-zero-row rule kept, so only the formula is wrong."""
    return torch.where(largest == 0, 1.0, largest / divisor)


def _abs_max(w: torch.Tensor) -> torch.Tensor:
    return w.double().abs().amax(dim=1)


SCALE_MISTAKES: tuple[tuple[str, Callable[[torch.Tensor], torch.Tensor]], ...] = (
    (
        "one scale for the whole tensor (its largest |w| / 127) on every row; the scale is "
        "per output row: w.abs().amax(dim=1) / 127.",
        lambda w: _or_one(w.double().abs().amax().expand(w.shape[0]), QMAX).float(),
    ),
    (
        "you divided by 128; symmetric int8 uses -127..127, so the largest |w| of the row "
        "must map to 127: divide by 127.",
        lambda w: _or_one(_abs_max(w), 128).float(),
    ),
    (
        "you divided by 255, the width of int8's whole range; symmetric int8 maps the "
        "row's largest |w| to 127: divide by 127.",
        lambda w: _or_one(_abs_max(w), 255).float(),
    ),
    (
        "that is the asymmetric scale (max - min) / 255, which needs a zero point; the "
        "symmetric scale is max|w| / 127.",
        lambda w: _or_one(w.double().amax(1) - w.double().amin(1), 255).float(),
    ),
    (
        "you took the largest entry, not the largest magnitude: a row whose biggest entry is "
        "negative must count it. Use w.abs().amax(dim=1).",
        lambda w: _or_one(w.double().amax(1), QMAX).float(),
    ),
    (
        "an all-zero row got scale 0, so quantizing it divides 0 by 0 (nan); the rule gives "
        "such a row the scale 1.0 (torch.where(m == 0, 1.0, m / 127)).",
        lambda w: (_abs_max(w) / QMAX).float(),
    ),
    (
        "the scales came back (out, 1), as keepdim=True leaves them; return shape (out,).",
        lambda w: reference_scales(w)[:, None],
    ),
    (
        "you took the maximum over dim 0, one scale per input column; the scale is per "
        "output row, the max over dim 1 (each row of w is one output channel).",
        lambda w: _or_one(w.double().abs().amax(dim=0), QMAX).float(),
    ),
    (
        "the values are right but the dtype is float64; return float32 scales.",
        lambda w: reference_scales(w).double(),
    ),
)


def _round_away(v: torch.Tensor) -> torch.Tensor:
    return torch.sign(v) * torch.floor(v.abs() + 0.5)


def _q(v: torch.Tensor, low: int = -QMAX) -> torch.Tensor:
    return v.clamp(low, QMAX).to(torch.int8)


def _ratios(w: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return w.float() / scale.float()[:, None]


def _wrapped(v: torch.Tensor) -> torch.Tensor:
    """An int64 result cast to int8 without a clamp: it wraps around, mod 256."""
    return v.to(torch.int64).to(torch.int8)


def _columns(w: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return _q(torch.round(w.float() / scale.float()[None, :]))


QUANTIZE_MISTAKES: tuple[tuple[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]], ...] = (
    (
        "ties were rounded half away from zero (2.5 -> 3, -2.5 -> -3); the rule is half to "
        "even, as torch.round does (2.5 -> 2, -2.5 -> -2, 3.5 -> 4).",
        lambda w, s: _q(_round_away(_ratios(w, s))),
    ),
    (
        "ties were rounded up, as floor(v + 0.5) does (2.5 -> 3, -3.5 -> -3); the rule is "
        "half to even, as torch.round does (2.5 -> 2, -3.5 -> -4).",
        lambda w, s: _q(torch.floor(_ratios(w, s) + 0.5)),
    ),
    (
        "the ratios were truncated toward zero, not rounded: casting to int8 drops the "
        "fraction. Round first: torch.round(w / scale[:, None]).",
        lambda w, s: _q(torch.trunc(_ratios(w, s))),
    ),
    (
        "you clamped to -128..127; the symmetric range is -127..127, so a clipped entry "
        "below -127 becomes -127 (and -q is always representable).",
        lambda w, s: _q(torch.round(_ratios(w, s)), low=-128),
    ),
    (
        "nothing was clamped: an entry beyond ±127 (a row with a clipped scale) wrapped "
        "around when cast to int8. Clamp to -127..127 before the cast.",
        lambda w, s: _wrapped(torch.round(_ratios(w, s))),
    ),
    (
        "you recomputed each row's scale from w; quantize must use the scale it is given, "
        "which for some rows is smaller than max|w| / 127 (a clipped scale).",
        lambda w, s: reference_quantize(w, reference_scales(w)),
    ),
    (
        "you multiplied by the scale; quantizing divides by it (w / scale[:, None]).",
        lambda w, s: _q(torch.round(w.float() * s.float()[:, None])),
    ),
    (
        "each column was divided by a scale (w / scale broadcasts scale along the last "
        "dim); the scale is per output row: w / scale[:, None].",
        _columns,
    ),
    (
        "the values are right but the dtype is float32: torch.round returns floats. "
        "Cast with .to(torch.int8).",
        lambda w, s: reference_quantize(w, s).float(),
    ),
    (
        "the values are right but the dtype is int64 (.long()); the point is 1 byte per "
        "weight: cast with .to(torch.int8).",
        lambda w, s: reference_quantize(w, s).long(),
    ),
    (
        "the values are right but the dtype is int32 (.int()); the point is 1 byte per "
        "weight: cast with .to(torch.int8).",
        lambda w, s: reference_quantize(w, s).int(),
    ),
)

LinearSlip = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
LINEAR_MISTAKES: tuple[tuple[str, LinearSlip], ...] = (
    (
        "the bias is missing: x @ (q * scale[:, None]).T + bias.",
        lambda x, q, s, b: x @ (q * s[:, None]).T,
    ),
    (
        "the bias was scaled too: (x @ q.T + bias) * scale; only the product is scaled, "
        "(x @ q.T) * scale + bias.",
        lambda x, q, s, b: (x @ q.T + b) * s,
    ),
    (
        "the scale was applied per input column (q * scale, or x * scale); it is per "
        "output row: q * scale[:, None], or (x @ q.T) * scale.",
        lambda x, q, s, b: x @ (q * s[None, :]).T + b,
    ),
    (
        "you multiplied by the weight untransposed (x @ w); w is (out, in), so the layer "
        "is x @ w.T.",
        lambda x, q, s, b: x @ (q * s[:, None]) + b,
    ),
)


def _slips(
    slips: Sequence[tuple[str, Callable[..., torch.Tensor]]], args: Sequence[torch.Tensor]
) -> tuple[Mistake, ...]:
    """What each slip returns here; one whose shapes do not fit (it raises) is left out."""
    found = []
    for why, slip in slips:
        try:
            found.append(Mistake(slip(*args), why))
        except RuntimeError:
            continue
    return tuple(found)


# -- cases -----------------------------------------------------------------------------------


def scales_case(w: torch.Tensor, label: str, drawn: bool = True) -> Case:
    expected = reference_scales(w)
    return Case(
        "weight_scales",
        (w,),
        expected,
        label,
        rtol=SCALE_RTOL,
        atol=0.0,
        mistakes=_slips(SCALE_MISTAKES, (w,)),
        drawn=drawn,
    )


def quantize_case(w: torch.Tensor, scale: torch.Tensor, label: str, drawn: bool = True) -> Case:
    return Case(
        "quantize",
        (w, scale),
        reference_quantize(w, scale),
        label,
        rtol=0.0,
        atol=0.0,
        mistakes=_slips(QUANTIZE_MISTAKES, (w, scale)),
        drawn=drawn,
    )


def linear_tolerance(in_features: int) -> float:
    """The relative bound ``int8_linear`` is held to, per unit of the absolute product."""
    return (in_features + 2) * LINEAR_RTOL_PER_TERM


def linear_case(
    x: torch.Tensor,
    q: torch.Tensor,
    scale: torch.Tensor,
    bias: torch.Tensor,
    label: str,
    drawn: bool = True,
) -> Case:
    wide = (x.double(), q.double(), scale.double(), bias.double())
    size = wide[0].abs() @ (wide[1] * wide[2][:, None]).abs().T + wide[3].abs()
    return Case(
        "int8_linear",
        (x, q, scale, bias),
        reference_linear(x, q, scale, bias).float(),
        label,
        rtol=linear_tolerance(q.shape[1]),
        atol=0.0,
        mistakes=tuple(
            Mistake(m.output.float(), m.explanation) for m in _slips(LINEAR_MISTAKES, wide)
        ),
        scale=size,
        drawn=drawn,
    )


# -- inputs ----------------------------------------------------------------------------------

#: the kinds of row a quantize case mixes
REGULAR, TIES, CLIPPED, ZERO = "regular", "ties", "clipped", "zero"


def _uniform(gen: torch.Generator, n: int, low: float, high: float) -> torch.Tensor:
    return low + (high - low) * torch.rand(n, generator=gen, dtype=torch.float64)


def _off_tie(gen: torch.Generator, whole: torch.Tensor) -> torch.Tensor:
    """``whole`` plus a fraction at least TIE_MARGIN from ±0.5: never near a tie."""
    return whole + _uniform(gen, whole.numel(), -0.5 + TIE_MARGIN, 0.5 - TIE_MARGIN)


def _wholes(gen: torch.Generator, n: int, spread: float, limit: int) -> torch.Tensor:
    """Integers, most small as a trained layer's are, within ``-limit..limit``."""
    return torch.round(draw_normal(gen, n) * spread).clamp(-limit, limit)


def _power_of_two(gen: torch.Generator) -> float:
    return 2.0 ** -draw_int(gen, 3, 9)


def _ordinary_scale(gen: torch.Generator) -> float:
    """A positive float32 scale of a trained layer's size (about 1e-4 to 1e-2)."""
    return float(torch.tensor(10.0 ** float(_uniform(gen, 1, -4.0, -2.0)[0])).float())


def quantize_row(
    gen: torch.Generator, kind: str, n: int, ties: Sequence[float] = ()
) -> tuple[torch.Tensor, float]:
    """One row of w (float32) and the scale quantize is given for it.

    ``regular``: the scale is the row's own max|w| / 127, one entry is ±127 exactly and the
    rest sit off ties; ``ties``: a power-of-two scale and exact halves (``ties``, or drawn);
    ``clipped``: a scale below the row's own, so entries land beyond ±127 in both signs;
    ``zero``: all zeros with scale 1.0."""
    if kind == ZERO:
        return torch.zeros(n, dtype=torch.float32), 1.0
    if kind == TIES:
        scale = _power_of_two(gen)
        v = _off_tie(gen, _wholes(gen, n, 20.0, 120))
        halves = torch.tensor(ties, dtype=torch.float64) if ties else None
        if halves is None:
            count = max(1, n // 2)
            halves = _wholes(gen, count, 6.0, 120) + 0.5
        k = min(len(halves), n)
        v[:k] = halves[:k]
        v = v[torch.randperm(n, generator=gen)]
        return (v * scale).float(), scale  # exact: few bits times a power of two
    if kind == CLIPPED:
        scale = _ordinary_scale(gen)
        v = _off_tie(gen, _wholes(gen, n, 120.0, 250))
        v[0] = -float(draw_int(gen, 129, 250)) + float(_uniform(gen, 1, -0.4, 0.4)[0])
        if n > 1:
            v[1] = float(draw_int(gen, 129, 250)) + float(_uniform(gen, 1, -0.4, 0.4)[0])
        v = v[torch.randperm(n, generator=gen)]
        return (v * scale).float(), scale
    scale = _ordinary_scale(gen)
    v = _off_tie(gen, _wholes(gen, n, 40.0, 126))
    v[draw_int(gen, 0, n - 1)] = QMAX * (1 if draw_int(gen, 0, 1) else -1)
    w = (v * scale).float()
    return w, float(reference_scales(w[None, :])[0])


def quantize_inputs(
    gen: torch.Generator, kinds: Sequence[str], n: int
) -> tuple[torch.Tensor, torch.Tensor]:
    rows = [quantize_row(gen, kind, n) for kind in kinds]
    w = torch.stack([r for r, _ in rows])
    return w, torch.tensor([s for _, s in rows], dtype=torch.float32)


def scales_weight(gen: torch.Generator, out: int, n: int, zero_rows: int) -> torch.Tensor:
    """Rows of different sizes; half of them have their largest magnitude negative, one is
    all negative (where it fits), the last ``zero_rows`` are zeros."""
    w = draw_normal(gen, out, n) * torch.exp(draw_normal(gen, out, 1)) * 0.02
    for r in range(out):
        top = int(w[r].abs().argmax())
        w[r, top] = w[r, top].abs() * (-1 if r % 2 == 0 else 1)
    if out > 2:
        w[1] = -w[1].abs()
    if zero_rows:
        w[-zero_rows:] = 0.0
    return w.float()


def linear_layer(
    gen: torch.Generator, out: int, n: int, zero_row: int | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, scale and a bias kept clear of zero, from a float layer of a trained one's size."""
    w = (draw_normal(gen, out, n) * torch.exp(0.5 * draw_normal(gen, out, 1))).float()
    w /= math.sqrt(n)
    if zero_row is not None:
        w[zero_row] = 0.0
    scale = reference_scales(w)
    q = reference_quantize(w, scale)
    sign = torch.where(draw_normal(gen, out) < 0, -1.0, 1.0)
    bias = (sign * (0.25 + 0.5 * draw_normal(gen, out).abs())).float()
    return q, scale, bias


def _row_kinds(kinds: Sequence[str]) -> str:
    """``2 regular, 1 ties, 3 zero rows``: how many rows of each kind, in a fixed order."""
    counts = [f"{kinds.count(k)} {k}" for k in (REGULAR, TIES, CLIPPED, ZERO) if k in kinds]
    return f"{', '.join(counts)} rows"


def _shape(t: torch.Tensor) -> str:
    return str(tuple(t.shape))


class Int8Weights(CaseGrader):
    declaration = DECLARATION
    forbidden = FORBIDDEN
    forbidden_what = "torch's own quantization; write the rounding, clamping and scaling yourself"
    hints = HINTS
    nonfinite_hint = NONFINITE
    passed_feedback = PASSED_FEEDBACK

    def fixed_cases(self, device: str) -> list[Case]:
        """The same in every plan: scales of rows with a zero row, negative largest entries,
        an all-negative row and a square w; quantize with exact ties at ±0.5..±3.5 and
        ±100.5, ±126.5, a zero row, clipped rows past ±128 and a square w; int8_linear with
        in = 1024 and a (B, T, in) x, and a square layer: every listed slip fails here."""
        gen = torch.Generator().manual_seed(FIXED_SEED)
        cases = [
            scales_case(scales_weight(gen, 6, 8, 1), "w (6, 8) with an all-zero row", False),
            scales_case(scales_weight(gen, 5, 5, 0), "square w (5, 5)", False),
        ]
        small_ties = [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5]
        big_ties = [-126.5, -100.5, 99.5, 126.5, -4.5, 4.5]
        rows = [
            quantize_row(gen, TIES, 10, small_ties),
            quantize_row(gen, ZERO, 10),
            quantize_row(gen, CLIPPED, 10),
            quantize_row(gen, REGULAR, 10),
            quantize_row(gen, TIES, 10, big_ties),
            quantize_row(gen, CLIPPED, 10),
        ]
        w = torch.stack([r for r, _ in rows])
        scale = torch.tensor([s for _, s in rows], dtype=torch.float32)
        cases.append(
            quantize_case(
                w, scale, "w (6, 10): ties, an all-zero row, clipped rows, max at ±127", False
            )
        )
        square = [REGULAR, TIES, CLIPPED, REGULAR, TIES, CLIPPED]
        w, scale = quantize_inputs(gen, square, 6)
        cases.append(quantize_case(w, scale, "square w (6, 6): ties and clipped rows", False))
        q, s, b = linear_layer(gen, 40, 1024, zero_row=5)
        x = draw_normal(gen, 2, 3, 1024).float()
        cases.append(linear_case(x, q, s, b, "x (2, 3, 1024), q (40, 1024), row 5 zero", False))
        q, s, b = linear_layer(gen, 8, 8, zero_row=None)
        x = draw_normal(gen, 4, 8).float()
        cases.append(linear_case(x, q, s, b, "x (4, 8), square q (8, 8)", False))
        return cases

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        cases = []
        for _ in range(2):
            out, n = draw_int(gen, 3, 24), draw_int(gen, 2, 48)
            zeros = draw_int(gen, 0, 1)
            w = scales_weight(gen, out, n, zeros)
            cases.append(scales_case(w, f"w {_shape(w)}" + (", last row zero" if zeros else "")))
        for _ in range(2):
            out, n = draw_int(gen, 3, 16), draw_int(gen, 4, 40)
            kinds = [(REGULAR, TIES, CLIPPED, ZERO)[draw_int(gen, 0, 3)] for _ in range(out)]
            w, scale = quantize_inputs(gen, kinds, n)
            cases.append(quantize_case(w, scale, f"w {_shape(w)}, {_row_kinds(kinds)}"))
        sizes = ((draw_int(gen, 4, 64), False), (draw_int(gen, 256, 2048), True))
        for n, three_d in sizes:
            out = draw_int(gen, 2, 48)
            out += out == n  # never square: a scale on the wrong axis raises here
            zero_row = draw_int(gen, 0, out - 1) if draw_int(gen, 0, 1) else None
            q, s, b = linear_layer(gen, out, n, zero_row)
            lead = (draw_int(gen, 1, 3), draw_int(gen, 1, 5)) if three_d else (draw_int(gen, 1, 6),)
            x = draw_normal(gen, *lead, n).float()
            label = f"x {_shape(x)}, q {_shape(q)}"
            cases.append(
                linear_case(
                    x, q, s, b, label + (f", row {zero_row} zero" if zero_row is not None else "")
                )
            )
        return cases

    def judge(self, task: str, plan: Plan, result: SandboxResult, source: str) -> Verdict:
        """The cases' verdict, with the bytes a decode step reads as a note once the
        functions ran (a fact of the shapes, whatever the results)."""
        verdict = super().judge(task, plan, result, source)
        if result.status != "ok":
            return verdict
        note = decode_bytes_note(plan.expected["cases"])
        return dataclasses.replace(verdict, notes=(*verdict.notes, note))


# -- the bytes a decode step reads ---------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """The linear layers a decode step reads whole, as (out, in) shapes, and their name."""

    name: str
    layers: tuple[tuple[int, int], ...]

    @property
    def weights(self) -> int:
        return sum(o * i for o, i in self.layers)

    @property
    def rows(self) -> int:
        return sum(o for o, _ in self.layers)


def llama2_7b() -> Model:
    """Llama 2 7B as its config states it (hidden 4096, intermediate 11008, 32 layers, vocab
    32000): per block q, k, v, o (4096 by 4096), gate and up (11008 by 4096), down (4096 by
    11008), and the untied output head.  The embedding is looked up a row per token, and the
    norms are a few thousand numbers: neither is counted."""
    d, ff, blocks, vocab = 4096, 11008, 32, 32000
    block = ((d, d),) * 4 + ((ff, d),) * 2 + ((d, ff),)
    return Model("Llama 2 7B", block * blocks + ((vocab, d),))


#: the decode-ceilings quiz's bandwidth (an H100 SXM)
BANDWIDTH = 3.35e12


def int8_bytes(out: int, n: int) -> int:
    """One byte per weight, plus a float32 scale per output row."""
    return out * n + 4 * out


def decode_bytes_note(cases: Sequence[Case]) -> str:
    layers = [c.args[1].shape for c in cases if c.function == "int8_linear"]
    out, n = max(layers, key=lambda s: s[0] * s[1])
    model = llama2_7b()
    bf16, int8 = 2 * model.weights, model.weights + 4 * model.rows
    return (
        f"Bytes per decode step (a fact of the shapes, not a timing): the largest layer here, "
        f"q ({out}, {n}), reads {4 * out * n:,} bytes of float32 weights, {2 * out * n:,} in "
        f"bf16 and {int8_bytes(out, n):,} as int8 with its float32 scales. "
        f"{model.name}, the quest's model, reads {model.weights / 1e9:.2f}e9 weights whole "
        f"each step (its 32 blocks' seven linear layers and the output head): "
        f"{bf16 / 1e9:.2f} GB in bf16, {int8 / 1e9:.2f} GB in int8 with scales, "
        f"{(bf16 - int8) / 1e9:.2f} GB less, so at {BANDWIDTH / 1e12:g} TB/s its batch-1 "
        f"ceiling (weights only) rises from {BANDWIDTH / bf16:.0f} to "
        f"{BANDWIDTH / int8:.0f} tokens/s."
    )
