"""Name the mistake, not just the symptom: compare a wrong answer with common wrong answers.

"9 of 12 entries wrong" says something is off; "this is what attention gives without the
1/sqrt(head_dim) scale" says what.  Each ``Case`` carries the outputs of a few typical
mistakes, computed by the trusted grader; when one mistake reproduces every failing result
of a function, its explanation is the likely cause.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from graders.comparison import Case, explained_by
from graders.tensors import from_raw
from sandbox.api import CallResult


def diagnose(wrong: Sequence[tuple[Case, CallResult | None]], nonfinite_hint: str = "") -> str:
    """The known mistake that explains every failing result in ``wrong`` (the cases of one
    function that failed, with their results); else, when a result has nan or inf where
    every answer is finite, ``nonfinite_hint``.

    Requiring every failing case keeps the diagnosis honest: a small case where two
    mistakes happen to agree cannot name the wrong one, and two bugs at once name none.
    A case that raised or returned no tensor is left out: it says nothing about values.
    """
    failing = [
        (case, from_raw(result.tensor))
        for case, result in wrong
        if result is not None and result.tensor is not None
    ]
    if not failing:
        return ""
    explained: list[str] | None = None
    for case, got in failing:
        explained = explained_by(case, got, among=explained)
        if not explained:
            break
    if explained:
        return explained[0]
    if nonfinite_hint and any(_nonfinite_where_finite(c.expected, got) for c, got in failing):
        return nonfinite_hint
    return ""


def _nonfinite_where_finite(expected: torch.Tensor, got: torch.Tensor) -> bool:
    if not got.is_floating_point() or not bool(torch.isfinite(expected).all()):
        return False
    return not bool(torch.isfinite(got).all())
