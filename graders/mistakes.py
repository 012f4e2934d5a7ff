"""Name the mistake, not just the symptom: compare a wrong answer with common wrong answers.

"9 of 12 entries wrong" says something is off; "this is what attention gives without the
1/sqrt(head_dim) scale" says what.  A ``DiagnosedCase`` carries the outputs of a few
typical mistakes, computed by the trusted grader; when one mistake reproduces every
failing result of a function, its explanation is added to that function's failing check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from bot.sandbox.api import CallResult
from graders.base import Check
from graders.cases import Case, CaseGrader, compare, compare_tensor
from graders.tensors import from_raw


@dataclass(frozen=True)
class Mistake:
    """What one typical mistake returns for a case, and what to tell a learner who made it."""

    output: torch.Tensor
    explanation: str


@dataclass(frozen=True)
class DiagnosedCase(Case):
    mistakes: tuple[Mistake, ...] = ()


class DiagnosingGrader(CaseGrader):
    """A ``CaseGrader`` whose failing correctness checks say which mistake was made."""

    #: said when a result has nan or inf where every expected entry is finite
    nonfinite_hint: str = ""

    def _correctness(self, function: str, mine: Sequence[tuple[Case, CallResult | None]]) -> Check:
        check = super()._correctness(function, mine)
        if check.passed:
            return check
        note = self._diagnose(mine)
        return Check(check.name, False, f"{check.message} Likely cause: {note}") if note else check

    def _diagnose(self, mine: Sequence[tuple[Case, CallResult | None]]) -> str:
        """Non-finite output first; else the known mistake that explains every failing result.

        Requiring every failing case keeps the diagnosis honest: a small case where two
        mistakes happen to agree cannot name the wrong one, and two bugs at once name none.
        """
        failing: list[tuple[Case, torch.Tensor]] = []
        for case, result in mine:
            if result is None or result.tensor is None or compare(case, result).ok:
                continue
            got = from_raw(result.tensor)
            if self.nonfinite_hint and _nonfinite_where_finite(case.expected, got):
                return self.nonfinite_hint
            failing.append((case, got))
        if not failing:
            return ""
        explained: list[str] | None = None
        for case, got in failing:
            matching = [
                m.explanation
                for m in getattr(case, "mistakes", ())
                if compare_tensor(replace(case, expected=m.output), got).ok
            ]
            explained = matching if explained is None else [e for e in explained if e in matching]
        return explained[0] if explained else ""


def _nonfinite_where_finite(expected: torch.Tensor, got: torch.Tensor) -> bool:
    if not got.is_floating_point() or not bool(torch.isfinite(expected).all()):
        return False
    return not bool(torch.isfinite(got).all())
