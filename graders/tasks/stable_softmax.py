"""Grader for transformer-internals/stable-softmax: a softmax that survives large logits.

The cases that matter are the ones where the textbook formula breaks in float32: logits
near +1000 overflow ``exp`` to inf (inf / inf is nan), logits near -1000 underflow every
term to 0 (0 / 0 is nan), and rows far apart in scale defeat subtracting one max for the
whole tensor.  The expected values come from ``torch.softmax`` in float64.

The float32 tolerance, 2e-4 relative, is set by the least accurate correct formulation:
``exp(x - logsumexp(x))`` rounds ``logsumexp`` near 1000 to float32, whose spacing there
is 6e-5, so its results are off by up to 3e-5 relative below 1024 and 6e-5 up to 2048.
Every listed mistake is off by far more (nan, another shape or dtype, or O(1) errors).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.declaration import Declaration, Speed
from graders.draws import draw_int, draw_normal
from graders.tensors import dtype_name

DECLARATION = Declaration(
    functions=("softmax(x) -> Tensor",),
    speed=Speed("softmax", "softmax_rows"),
)

LIBRARY_SOFTMAX = frozenset(
    {"softmax", "log_softmax", "softmin", "_softmax", "_log_softmax", "logsumexp"}
    | {"gumbel_softmax", "special_softmax"}
)
FORBIDDEN = {"softmax": LIBRARY_SOFTMAX}
#: (rtol, atol) per input dtype, as the task's prompt states them
TOLERANCE = {torch.float32: (2e-4, 1e-6), torch.float64: (1e-10, 1e-12)}
HINT = (
    "softmax(x)[..., i] is exp(x[..., i] - m) / sum over j of exp(x[..., j] - m) along the "
    "last dim, where m is that row's max (x.max(dim=-1, keepdim=True).values), returned in "
    "x's dtype and shape. In float32 each entry must be within 2e-4 relative (plus 1e-6) of "
    "the exact value, in float64 within 1e-10 (plus 1e-12)."
)
HINTS = {"softmax": HINT}
NONFINITE = (
    "your result has nan or inf where every answer is finite. In float32, exp overflows to "
    "inf above about 88 (inf / inf is nan), and below about -103 every term underflows to "
    "0 (0 / 0 is nan); a row holding -inf turns x - mean into nan. Subtracting the max of "
    "each row (not of the whole tensor) keeps the largest exponent at exactly 0, so no row "
    "can overflow or vanish."
)
PASSED_FEEDBACK = (
    "Stable at +1000 and -1000. Subtracting the row max costs one extra pass over the data, "
    "which is why fused kernels track a running max instead (the 'online softmax' trick "
    "FlashAttention is built on). Logits around 1000 are not exotic: unscaled attention "
    "scores and the logits of a confident model both get there."
)

#: the clamp a learner might use to keep exp finite instead of shifting
_CLAMP = 80.0
#: the fixed cases' inputs are drawn once from this seed, the same in every plan
_FIXED_SEED = 12


def _whole_tensor(x: torch.Tensor) -> torch.Tensor:
    """The slip of one max and one sum for every entry."""
    e = (x - x.max()).exp()
    return e / e.sum()


def _sums_without_keepdim(x: torch.Tensor) -> torch.Tensor:
    """The slip of dividing by row sums that lost their dim (broadcast along the rows)."""
    e = (x - x.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1)


#: explanation -> the slip, written out in float64 (it may raise for shapes it cannot take)
_MISTAKES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "your entries sum to 1 over the whole tensor; normalise each row on its own "
    "(sum over dim=-1 with keepdim=True).": _whole_tensor,
    "you normalised along the first dim; softmax here runs along the last (dim=-1).": (
        lambda x: torch.softmax(x, dim=0)
    ),
    "you normalised along dim=1, which is the last dim only for 2-D input; use dim=-1 so "
    "any number of dims works.": lambda x: torch.softmax(x, dim=1),
    "the row sums lost their dim: e / e.sum(dim=-1) lines each sum up with the wrong "
    "entries (or broadcasts to a new shape). Sum with keepdim=True.": _sums_without_keepdim,
    "rows of large logits came out with equal weights: clamping the logits keeps exp "
    "finite but changes their differences, and only differences matter. Subtract each "
    "row's max instead of clamping.": lambda x: torch.softmax(x.clamp(-_CLAMP, _CLAMP), -1),
}
#: the slip of returning the float64 a computation was done in
_RETURNS_FLOAT64 = (
    "your result is float64 for float32 input: compute in whatever dtype you like, but "
    "return x's dtype (e.g. .to(x.dtype))."
)


class StableSoftmax(CaseGrader):
    declaration = DECLARATION
    forbidden = FORBIDDEN
    forbidden_what = "a library routine that computes the softmax for you"
    hints = HINTS
    nonfinite_hint = NONFINITE
    passed_feedback = PASSED_FEEDBACK

    def fixed_cases(self, device: str) -> list[Case]:
        """One case per way the listed slips go wrong, the same in every plan: a 1-D row,
        non-square, square and 3-D batches (the wrong dim, a lost keepdim), +-1000, rows far
        apart (one max for everything) and -inf (the mean instead of the max).  Each holds
        at most 12 logits, so a failure shows its input."""
        gen = torch.Generator().manual_seed(_FIXED_SEED)
        randn = partial(draw_normal, gen)
        fixed = partial(_case, drawn=False)
        return [
            fixed(randn(5) * 3, torch.float32, "one row of ordinary logits"),
            fixed(randn(3, 4) * 3, torch.float64, "ordinary logits"),
            fixed(randn(3, 3) * 3, torch.float32, "a square batch"),
            fixed(randn(2, 2, 3) * 3, torch.float32, "a 3-D batch"),
            fixed(randn(3, 1), torch.float32, "rows of length 1"),
            fixed(1000 + randn(3, 4) * 5, torch.float32, "large logits near +1000"),
            fixed(-1000 + randn(3, 4) * 5, torch.float32, "large logits near -1000"),
            fixed(_far_apart(randn(3, 4)), torch.float32, "rows near +1000, 0 and -1000"),
            fixed(_masked(gen, randn(3, 4) * 3), torch.float32, "logits with -inf"),
        ]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Ordinary logits in several ranks and dtypes, then the ones naive code gets wrong."""
        size, randn = partial(draw_int, gen), partial(draw_normal, gen)
        return [
            _case(randn(size(2, 10)) * 3, torch.float32, "one row of ordinary logits"),
            _case(randn(size(1, 5), size(2, 10)) * 3, torch.float64, "ordinary logits"),
            _case(randn(2, size(1, 4), size(2, 8)) * 3, torch.float32, "a 3-D batch"),
            _case(randn(size(1, 4), 1), torch.float32, "rows of length 1"),
            _case(torch.full((2, size(2, 6)), 7.0), torch.float32, "rows of equal logits"),
            _case(1000 + randn(4, size(2, 8)) * 5, torch.float32, "large logits near +1000"),
            _case(-1000 + randn(4, size(2, 8)) * 5, torch.float32, "large logits near -1000"),
            _case(1000 + randn(2, size(2, 8)) * 5, torch.float64, "large logits near +1000"),
            _case(_far_apart(randn(3, size(2, 8))), torch.float32, "rows near +1000, 0 and -1000"),
            _case(_masked(gen, randn(4, size(3, 8)) * 3), torch.float32, "logits with -inf"),
        ]


def _far_apart(x: torch.Tensor) -> torch.Tensor:
    """Three rows of ``x`` moved to +1000, 0 and -1000."""
    return x + torch.tensor([[1000.0], [0.0], [-1000.0]], dtype=x.dtype)


def _masked(gen: torch.Generator, x: torch.Tensor) -> torch.Tensor:
    """About 40% of ``x`` set to -inf, keeping one finite entry in every row (the first)
    and in every column (so a softmax down the columns is wrong rather than nan)."""
    hide = torch.rand(x.shape, generator=gen) < 0.4
    hide[:, 0] = False
    columns = torch.arange(x.shape[1])
    hide[columns % x.shape[0], columns] = False
    return x.masked_fill(hide, float("-inf"))


def _case(x: torch.Tensor, dtype: torch.dtype, what: str, *, drawn: bool = True) -> Case:
    """``x`` in float64 is rounded to ``dtype`` first, so the reference sees the same input."""
    x = x.to(dtype)
    wide = x.double()
    rtol, atol = TOLERANCE[dtype]
    shape = "x".join(map(str, x.shape))
    return Case(
        "softmax",
        (x,),
        torch.softmax(wide, dim=-1).to(dtype),
        f"{what}, {shape} {dtype_name(dtype)}",
        rtol,
        atol,
        mistakes=_mistakes(wide, dtype),
        drawn=drawn,
    )


def _mistakes(wide: torch.Tensor, dtype: torch.dtype) -> tuple[Mistake, ...]:
    """Each listed slip's output for this input, where the slip returns a tensor at all."""
    found = [Mistake(torch.softmax(wide, dim=-1), _RETURNS_FLOAT64)]  # harmless in float64
    for why, slip in _MISTAKES.items():
        try:
            found.append(Mistake(slip(wide).to(dtype), why))
        except (RuntimeError, IndexError):  # a slip that raises here is seen raising
            continue
    return tuple(found)
