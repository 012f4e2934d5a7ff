"""Grader for transformer-internals/stable-softmax: a softmax that survives large logits.

The cases that matter are the ones where the textbook formula breaks in float32: logits
near +1000 overflow ``exp`` to inf (inf / inf is nan), logits near -1000 underflow every
term to 0 (0 / 0 is nan), and rows far apart in scale defeat subtracting one max for the
whole tensor.  The expected values come from ``torch.softmax`` in float64.
"""

from __future__ import annotations

from functools import partial

import torch

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.draws import draw_int, draw_normal
from graders.tensors import dtype_name

LIBRARY_SOFTMAX = frozenset(
    {"softmax", "log_softmax", "softmin", "_softmax", "_log_softmax", "logsumexp"}
    | {"gumbel_softmax", "special_softmax"}
)
FORBIDDEN = {"softmax": LIBRARY_SOFTMAX}
HINT = (
    "softmax(x)[..., i] is exp(x[..., i]) / sum over j of exp(x[..., j]), along the last "
    "dim. Subtract each row's own max first (x.max(dim=-1, keepdim=True).values): every "
    "term is scaled by the same factor, which cancels, and the largest exponent becomes 0."
)
HINTS = {"softmax": HINT}
NONFINITE = (
    "your result has nan or inf where every answer is finite. In float32, exp overflows to "
    "inf above about 88 (inf / inf is nan), and below about -103 every term underflows to "
    "0 (0 / 0 is nan). Subtracting the max of each row (not of the whole tensor) keeps the "
    "largest exponent at exactly 0, so no row can overflow or vanish."
)
PASSED_FEEDBACK = (
    "Stable at +1000 and -1000. Subtracting the row max costs one extra pass over the data, "
    "which is why fused kernels track a running max instead (the 'online softmax' trick "
    "FlashAttention is built on). Logits around 1000 are not exotic: unscaled attention "
    "scores and the logits of a confident model both get there."
)


class StableSoftmax(CaseGrader):
    name = "stable_softmax"
    interface: tuple[str, ...] = ("softmax",)
    forbidden = FORBIDDEN
    forbidden_what = "a library routine that computes the softmax for you"
    hints = HINTS
    nonfinite_hint = NONFINITE
    passed_feedback = PASSED_FEEDBACK

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Ordinary logits in several ranks and dtypes, then the ones naive code gets wrong."""
        size, randn = partial(draw_int, gen), partial(draw_normal, gen)
        cases = [
            _case(randn(size(2, 10)) * 3, torch.float32, "one row of ordinary logits"),
            _case(randn(size(1, 5), size(2, 10)) * 3, torch.float64, "ordinary logits"),
            _case(randn(2, size(1, 4), size(2, 8)) * 3, torch.float32, "a 3-D batch"),
            _case(randn(size(1, 4), 1), torch.float32, "rows of length 1"),
            _case(torch.full((2, size(2, 6)), 7.0), torch.float32, "rows of equal logits"),
            _case(1000 + randn(4, size(2, 8)) * 5, torch.float32, "large logits near +1000"),
            _case(-1000 + randn(4, size(2, 8)) * 5, torch.float32, "large logits near -1000"),
        ]
        offsets = torch.tensor([[1000.0], [0.0], [-1000.0]], dtype=torch.float64)
        cases.append(
            _case(offsets + randn(3, size(2, 8)), torch.float32, "rows near +1000, 0 and -1000")
        )
        masked = randn(4, size(3, 8)) * 3
        hide = torch.rand(masked.shape, generator=gen) < 0.4
        hide[:, 0] = False  # every row keeps at least one finite logit
        cases.append(
            _case(masked.masked_fill(hide, float("-inf")), torch.float32, "logits with -inf")
        )
        return cases


def _case(x: torch.Tensor, dtype: torch.dtype, what: str) -> Case:
    """``x`` in float64 is rounded to ``dtype`` first, so the reference sees the same input."""
    x = x.to(dtype)
    wide = x.double()
    exps = (wide - wide.max()).exp()
    mistakes = (
        Mistake(
            (exps / exps.sum()).to(dtype),
            "your entries sum to 1 over the whole tensor; normalise each row on its own "
            "(sum over dim=-1 with keepdim=True).",
        ),
    )
    if x.dim() > 1:
        mistakes += (
            Mistake(
                torch.softmax(wide, dim=0).to(dtype),
                "you normalised along the first dim; softmax here runs along the last (dim=-1).",
            ),
        )
    shape = "x".join(map(str, x.shape))
    label = f"{what}, {shape} {dtype_name(dtype)}"
    rtol, atol = (1e-5, 1e-6) if dtype == torch.float32 else (1e-10, 1e-12)
    expected = torch.softmax(wide, dim=-1).to(dtype)
    return Case("softmax", (x,), expected, label, rtol, atol, mistakes=mistakes)
