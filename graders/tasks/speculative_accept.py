"""Grader for inference-engine/speculative-accept: the acceptance rule of speculative decoding.

The rule (Leviathan et al. 2023; Chen et al. 2023), as the task states it, with every uniform
given so the result is exact: draft token ``x = draft[b, i]`` is accepted when
``u_accept[b, i] * q[b, i, x] < p[b, i, x]``; at the first rejection one token is sampled
from ``max(0, p[b, i] - q[b, i])`` with ``u_sample[b]`` and the sequence stops; when all k
drafts are accepted a bonus token is sampled from ``p[b, k]`` with ``u_sample[b]``.  Sampling
weights ``w`` with ``u`` takes the smallest token ``t`` with ``cumsum(w)[t] > u * sum(w)``.
The result is ``(B, k + 1)`` int64: the emitted tokens from the left, then -1.

Every uniform is drawn at least ``MARGIN`` (1e-6) away from every threshold the rule compares
it with (and from those the listed slips compare it with, so a slip is named whichever way
it is written): ``<`` or ``<=``, dividing or multiplying, normalising before or after the
cumulative sum all round far inside that margin, so every sound float64 formulation emits the
same integers and the comparison is exact.

Besides the exact cases, the last call is ``STAT_SEQUENCES`` sequences drafted from ``q``
(a fixed seed, so it cannot flake), and ``extra_checks`` tests on the trusted side what the
rule guarantees: the number of tokens each sequence emits follows the acceptance rates
``alpha_i = sum(min(p_i, q_i))``, and the token at each position, among the sequences that
reach it, follows ``p`` there (Pearson's chi-square, ``graders.goodness_of_fit``; ``ALPHA``
in all, split evenly over the tests).  Redrawing the uniforms that fall within the margin
of one of its 78 thresholds moves a bin's probability by at most 2e-6 per threshold (1.6e-4
in all), far below the 1e-2 or so that 100,000 samples resolve.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from graders.base import Check, Plan, Verdict
from graders.cases import CaseGrader, match_results
from graders.comparison import Case, Mistake
from graders.declaration import Declaration
from graders.draws import draw_int
from graders.goodness_of_fit import ChiSquare, chi_square
from graders.tensors import from_raw, to_raw
from sandbox.api import Call, CallResult, SandboxResult

DECLARATION = Declaration(
    functions=("speculative_accept(draft, q, p, u_accept, u_sample) -> Tensor",),
)

FUNCTION = "speculative_accept"
#: every uniform lies at least this far from every threshold it is compared with
MARGIN = 1e-6
#: the statistical batch: its size, draft length and vocabulary, and its fixed seed
STAT_SEQUENCES = 100_000
STAT_LABEL = "100,000 sequences drafted from q, k = 3, V = 6 (the statistical batch)"
_STAT_SEED = 28
#: the chance that a correct solution fails the statistical check, over all its tests
ALPHA = 1e-6
#: the statistical batch's distributions, the same for every sequence: q[i] and p[i] at
#: draft position i, and p[3] for the bonus.  q[0] has a token it never drafts (5) and p[1]
#: one it rules out (4, always rejected when drafted); acceptance rates 0.70, 0.65, 0.90
STAT_Q = (
    (0.30, 0.25, 0.20, 0.15, 0.10, 0.00),
    (0.05, 0.05, 0.40, 0.30, 0.10, 0.10),
    (0.10, 0.20, 0.30, 0.20, 0.10, 0.10),
)
STAT_P = (
    (0.10, 0.20, 0.25, 0.15, 0.05, 0.25),
    (0.20, 0.15, 0.20, 0.25, 0.00, 0.20),
    (0.15, 0.15, 0.25, 0.25, 0.10, 0.10),
    (0.05, 0.10, 0.15, 0.20, 0.25, 0.25),
)
STAT_CHECK = f"{FUNCTION}: tokens follow the target's distributions"

HINT = (
    "For each sequence and i = 0..k-1 with x = draft[b, i]: accept when "
    "u_accept[b, i] * q[b, i, x] < p[b, i, x] and go on; at the first rejection emit one "
    "token sampled from max(0, p[b, i] - q[b, i]) with u_sample[b] and stop; if all k are "
    "accepted, emit a bonus token sampled from p[b, k] with u_sample[b]. Sampling w with u: "
    "the smallest t with cumsum(w)[t] > u * sum(w). Return (B, k + 1) int64, the emitted "
    "tokens from the left and -1 after them."
)
HINTS = {FUNCTION: HINT}
TIMEOUT_HINT = (
    "The last call holds 100,000 sequences: work on the whole batch at once with tensor "
    "operations (a loop over the k draft positions is fine); a Python loop over the "
    "sequences that calls torch for each of them takes several seconds on that call alone."
)
PASSED_FEEDBACK = (
    "Accepted with probability min(1, p/q), resampled from the residual max(0, p - q): every "
    "emitted token follows the target exactly, however poor the draft. A better draft only "
    "raises the acceptance rate alpha = sum(min(p, q)), and with it the "
    "(1 - alpha^(k+1)) / (1 - alpha) tokens per pass of the big model from the "
    "decode-ceilings quiz. Serving engines run this very rule on the GPU, for the whole "
    "batch at once."
)


@dataclass(frozen=True)
class Rule:
    """The rule, or one slip of it (each field's first value is the rule's)."""

    #: accept when u * q(x) < p(x); ``inverted``: u * p(x) < q(x); ``flipped``: the opposite
    accept: Literal["ratio", "inverted", "flipped"] = "ratio"
    #: what a rejection samples: max(0, p - q), p itself, or max(0, q - p)
    resample: Literal["residual", "target", "reversed"] = "residual"
    normalise: bool = True  # compare cumsum with u * total, not with u
    #: how many drafts are kept: those before the first rejection, every accepted one
    #: (``accepted.sum``), or all k positions with each rejection resampled in place
    stop: Literal["first", "count", "continue"] = "first"
    #: the bonus: from p[:, k], none, or from p[:, k - 1]
    bonus: Literal["last", "none", "previous"] = "last"
    always_bonus: bool = False  # with ``continue``: the bonus even after a rejection
    shift: Literal[0, 1, -1] = 0  # the inverse CDF one token too high or too low
    #: a token index past the vocabulary (V, or -1) left as is, clamped into 0..V-1, or
    #: (as argmax of an all-False mask gives) 0
    beyond: Literal["as-is", "clamp", "zero"] = "as-is"


CORRECT = Rule()


def speculate(
    draft: torch.Tensor,
    q: torch.Tensor,
    p: torch.Tensor,
    u_accept: torch.Tensor,
    u_sample: torch.Tensor,
    rule: Rule = CORRECT,
) -> torch.Tensor:
    """The reference (and, with another ``rule``, a slip), for the whole batch at once."""
    batch, k = draft.shape
    px = p[:, :k].gather(-1, draft.unsqueeze(-1)).squeeze(-1)
    qx = q.gather(-1, draft.unsqueeze(-1)).squeeze(-1)
    if rule.accept == "ratio":
        accepted = u_accept * qx < px
    elif rule.accept == "inverted":
        accepted = u_accept * px < qx
    else:
        accepted = ~(u_accept * qx < px)
    weights = torch.cat((_rejection_weights(rule, q, p[:, :k]), _bonus(rule, p)), dim=1)
    sampled = inverse_cdf(weights, u_sample.unsqueeze(-1), rule)  # (B, k + 1)
    fill = torch.full((batch, 1), -1, dtype=torch.int64)
    positions = torch.arange(k + 1)
    if rule.stop == "continue":
        head = torch.where(accepted, draft, sampled[:, :k])
        tail = sampled[:, k:] if rule.always_bonus else fill
        tail = torch.where(accepted.all(dim=1, keepdim=True), sampled[:, k:], tail)
        return torch.cat((head, tail), dim=1)
    if rule.stop == "first":
        n = accepted.long().cumprod(dim=1).sum(dim=1, keepdim=True)
    else:
        n = accepted.long().sum(dim=1, keepdim=True)
    last = sampled.gather(1, n)
    if rule.bonus == "none":
        last = torch.where(n == k, -1, last)
    padded = torch.cat((draft, fill), dim=1)
    return torch.where(positions < n, padded, torch.where(positions == n, last, -1))


def _rejection_weights(rule: Rule, q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    if rule.resample == "residual":
        return (p - q).clamp(min=0)
    if rule.resample == "target":
        return p
    return (q - p).clamp(min=0)


def _bonus(rule: Rule, p: torch.Tensor) -> torch.Tensor:
    k = p.shape[1] - 1
    return p[:, k - 1 : k] if rule.bonus == "previous" else p[:, k:]


def inverse_cdf(weights: torch.Tensor, u: torch.Tensor, rule: Rule = CORRECT) -> torch.Tensor:
    """The smallest token ``t`` with ``cumsum(weights)[t] > u * sum(weights)`` along the last
    dim (``u`` alone when the rule forgets to normalise), as int64; V when there is none."""
    c = weights.cumsum(dim=-1)
    v = u * c[..., -1] if rule.normalise else u.expand(c.shape[:-1])
    t = (c <= v.unsqueeze(-1)).sum(dim=-1)
    vocab = weights.shape[-1]
    if rule.shift == 1:  # the exclusive cumsum: one past, at most V
        t = (t + 1).clamp(max=vocab)
    elif rule.shift == -1:  # the last t with cumsum[t] <= v
        t = t - 1
    outside = (t < 0) | (t >= vocab)
    if rule.beyond == "clamp":
        t = t.clamp(0, vocab - 1)
    elif rule.beyond == "zero":
        t = torch.where(outside, 0, t)
    return t


def _variants(**slip: object) -> tuple[Rule, ...]:
    """One slip, with each way a learner's code treats a token index outside 0..V-1."""
    return tuple(
        dataclasses.replace(CORRECT, **slip, beyond=beyond) for beyond in ("as-is", "clamp", "zero")
    )


#: explanation -> the rules that make that slip (in the ways it is commonly written)
MISTAKES: dict[str, tuple[Rule, ...]] = {
    "at a rejection you sampled from the target p itself; sample from the residual "
    "max(0, p - q), normalised. The accepted drafts already deliver min(p, q), so only "
    "what is left of p may be added.": (Rule(resample="target"),),
    "your residual is max(0, q - p), the wrong way round: it is max(0, p - q), the mass "
    "the target wants and the draft under-proposes.": (Rule(resample="reversed"),),
    "the residual was not normalised: max(0, p - q) sums to less than 1, so compare its "
    "cumulative sum with u_sample * (its total), not with u_sample.": _variants(normalise=False),
    "you counted every accepted draft (accepted.sum()); only the drafts before the first "
    "rejection count (accepted.cumprod(dim=1).sum(dim=1)): a rejection ends the sequence.": (
        _variants(stop="count")
    ),
    "you went on after the first rejection; the resampled token is the last one emitted, "
    "and every place after it holds -1.": (
        Rule(stop="continue"),
        Rule(stop="continue", always_bonus=True),
    ),
    "when all k drafts are accepted, emit one more token: the bonus, sampled from p[:, k] "
    "with u_sample.": (Rule(bonus="none"),),
    "the bonus token comes from p[:, k], the target's distribution after the last draft; "
    "you sampled it from p[:, k - 1].": (Rule(bonus="previous"),),
    "the acceptance ratio is upside down: accept when u_accept * q(x) < p(x), that is "
    "u < p(x) / q(x), not q(x) / p(x).": (Rule(accept="inverted"),),
    "the acceptance test is the wrong way round: accept when u_accept < p(x) / q(x), "
    "reject otherwise.": _variants(accept="flipped"),
    "the inverse CDF is one token too high: take the smallest t whose cumulative sum, t's "
    "own weight included, is > u * total.": _variants(shift=1),
    "the inverse CDF is one token too low: take the smallest t with cumsum[t] > u * total, "
    "not the last t with cumsum[t] <= u * total.": _variants(shift=-1),
}


class SpeculativeAccept(CaseGrader):
    declaration = DECLARATION
    hints = HINTS
    passed_feedback = PASSED_FEEDBACK

    def fixed_cases(self, device: str) -> list[Case]:
        """Small crafted cases (each shown in full when it fails), a fixed batch of each
        kind the draws make, and the statistical batch, last."""
        return [*fixed_exact_cases(), statistical_case()]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """One batch of each kind, of drawn sizes: B 1..64, k 1..6, V 2..12."""
        return [
            _batch(gen, kind, draw_int(gen, 1, 64), draw_int(gen, 1, 6), draw_int(gen, 2, 12))
            for kind in KINDS
        ]

    def plan(self, seed: int, device: str) -> Plan:
        """The statistical batch runs last, after every exact case, as one call built once
        per process (its 40 MB of inputs are the same in every plan)."""
        gen = torch.Generator().manual_seed(seed)
        fixed = self.fixed_cases(device)
        exact = self.plan_of([*fixed[:-1], *self.make_cases(gen, device)], seed)
        cases = (*exact.expected["cases"], fixed[-1])
        return Plan((*exact.calls, statistical_call()), {"cases": cases}, seed)

    def extra_checks(
        self, cases: Sequence[Case], results: Sequence[CallResult | None], device: str
    ) -> list[Check]:
        """The statistical check, when the plan holds the statistical batch."""
        found = [r for c, r in zip(cases, results, strict=True) if c.label == STAT_LABEL]
        return [statistical_check(found[0])] if found else []

    def judge(self, task: str, plan: Plan, result: SandboxResult, source: str) -> Verdict:
        """As every case grader judges, with the statistical batch's slips worked out when
        its result is wrong, and a job out of time told about the 100,000-sequence call
        rather than about endless loops."""
        verdict = super().judge(task, _explaining(plan, result), result, source)
        if result.status != "timeout":
            return verdict
        checks = tuple(
            dataclasses.replace(c, message=f"{result.message.rstrip('.')}. {TIMEOUT_HINT}")
            for c in verdict.checks
        )
        return dataclasses.replace(verdict, checks=checks)


def _explaining(plan: Plan, result: SandboxResult) -> Plan:
    """``plan``, with the statistical batch's slips when its result came back with the
    right shape and dtype but other tokens (a slip's output always has them)."""
    cases: tuple[Case, ...] = plan.expected["cases"]
    found = [i for i, c in enumerate(cases) if c is statistical_case()]
    if result.status != "ok" or not found:
        return plan
    at = found[0]
    got = match_results(plan, result)[at]
    if got is None or got.tensor is None:
        return plan
    tensor, expected = from_raw(got.tensor), cases[at].expected
    if tensor.dtype != expected.dtype or tensor.shape != expected.shape:
        return plan
    if torch.equal(tensor, expected):
        return plan
    explained = (*cases[:at], explained_statistical_case(), *cases[at + 1 :])
    return dataclasses.replace(plan, expected={**plan.expected, "cases": explained})


# ---- the inputs -------------------------------------------------------------------------

Inputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]

#: the fixed cases' batches are drawn once from this seed, the same in every plan
_FIXED_SEED = 2028
#: what the draws make: drafts near the target (most accepted, bonuses), a draft unrelated
#: to it (many rejections), both with zeros, and some positions where the draft equals it
KINDS = ("a draft close to the target", "an unrelated draft", "zeros in p and q", "some q = p")
_FIXED_SIZES = ((48, 4, 5), (48, 3, 4), (48, 4, 6), (32, 5, 3))


def _batch(
    gen: torch.Generator, kind: str, batch: int, k: int, vocab: int, *, drawn: bool = True
) -> Case:
    """A batch of ``kind``, drafts drawn from q, uniforms kept off every threshold."""
    logits = 1.5 * torch.randn(batch, k + 1, vocab, generator=gen, dtype=torch.float64)
    p = _normalised(logits)
    if kind == KINDS[0]:
        noise = 0.5 * torch.randn(batch, k, vocab, generator=gen, dtype=torch.float64)
        q = _normalised(logits[:, :k] + noise)
    else:
        q = _normalised(1.5 * torch.randn(batch, k, vocab, generator=gen, dtype=torch.float64))
    if kind == KINDS[2]:
        p, q = _with_zeros(gen, p), _with_zeros(gen, q)
    if kind == KINDS[3]:
        same = torch.rand(batch, k, 1, generator=gen) < 0.5
        q = torch.where(same, p[:, :k], q)
    draft = inverse_cdf(q, torch.rand(batch, k, generator=gen, dtype=torch.float64))
    u_accept, u_sample = draw_uniforms(gen, draft, q, p)
    label = f"{kind}: B = {batch}, k = {k}, V = {vocab}"
    return _case(label, draft, q, p, u_accept, u_sample, drawn=drawn)


def _normalised(logits: torch.Tensor) -> torch.Tensor:
    return torch.softmax(logits, dim=-1)


def _with_zeros(gen: torch.Generator, w: torch.Tensor) -> torch.Tensor:
    """About a third of ``w``'s entries set to 0 (never a row's largest), renormalised."""
    drop = torch.rand(w.shape, generator=gen) < 0.35
    drop &= w < w.amax(dim=-1, keepdim=True)
    kept = w.masked_fill(drop, 0.0)
    return kept / kept.sum(dim=-1, keepdim=True)


def draw_uniforms(
    gen: torch.Generator, draft: torch.Tensor, q: torch.Tensor, p: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``u_accept`` and ``u_sample``, each at least ``MARGIN`` from every threshold the rule
    or a listed slip compares it with; a uniform too close is drawn again."""
    return (
        _kept_away(gen, draft.shape, _accept_thresholds(draft, q, p)),
        _kept_away(gen, draft.shape[:1], _sample_thresholds(q, p)),
    )


def _kept_away(gen: torch.Generator, shape: torch.Size, thresholds: torch.Tensor) -> torch.Tensor:
    u = torch.rand(shape, generator=gen, dtype=torch.float64)
    while True:
        close = ((u.unsqueeze(-1) - thresholds).abs() < MARGIN).any(dim=-1)
        if not bool(close.any()):
            return u
        u[close] = torch.rand(int(close.sum()), generator=gen, dtype=torch.float64)


def _accept_thresholds(draft: torch.Tensor, q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """``p(x) / q(x)`` (the rule's) and ``q(x) / p(x)`` (the inverted slip's) per draft."""
    k = draft.shape[1]
    px = p[:, :k].gather(-1, draft.unsqueeze(-1)).squeeze(-1)
    qx = q.gather(-1, draft.unsqueeze(-1)).squeeze(-1)
    inverse = torch.where(px > 0, qx / px, torch.inf)
    return torch.stack((px / qx, inverse), dim=-1)


def _sample_thresholds(q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Per sequence, every step ``cumsum[t] / total`` of every distribution ``u_sample`` may
    sample (the residuals, every row of p, the reversed residuals) and the residuals' raw
    steps (the unnormalised slip's), as one row of thresholds."""
    batch, k = q.shape[:2]
    residual = (p[:, :k] - q).clamp(min=0)
    rows = torch.cat((residual, p, (q - p[:, :k]).clamp(min=0)), dim=1)
    c = rows.cumsum(dim=-1)
    total = c[..., -1:]
    steps = torch.where(total > 0, c / total.clamp(min=1e-300), torch.inf)
    raw = residual.cumsum(dim=-1)
    return torch.cat((steps.reshape(batch, -1), raw.reshape(batch, -1)), dim=1)


def _case(
    label: str,
    draft: torch.Tensor,
    q: torch.Tensor,
    p: torch.Tensor,
    u_accept: torch.Tensor,
    u_sample: torch.Tensor,
    *,
    drawn: bool = True,
    explained: bool = True,
) -> Case:
    """The case, with the listed slips' outputs unless ``explained`` is False."""
    args: Inputs = (draft, q, p, u_accept, u_sample)
    expected = speculate(*args)
    mistakes = _mistakes(args, expected) if explained else ()
    return Case(FUNCTION, args, expected, label, trace=False, mistakes=mistakes, drawn=drawn)


def _mistakes(args: Inputs, expected: torch.Tensor) -> tuple[Mistake, ...]:
    """Each listed slip's distinct outputs for ``args`` that differ from ``expected``."""
    mistakes: list[Mistake] = []
    for why, rules in MISTAKES.items():
        outputs: list[torch.Tensor] = []
        for rule in rules:
            out = speculate(*args, rule)
            if not torch.equal(out, expected) and not any(torch.equal(out, o) for o in outputs):
                outputs.append(out)
        mistakes += [Mistake(out, why) for out in outputs]
    return tuple(mistakes)


def _tensors(
    draft: list[list[int]],
    q: list[list[list[float]]],
    p: list[list[list[float]]],
    u_accept: list[list[float]],
    u_sample: list[float],
) -> Inputs:
    f64 = torch.float64
    return (
        torch.tensor(draft, dtype=torch.int64),
        torch.tensor(q, dtype=f64),
        torch.tensor(p, dtype=f64),
        torch.tensor(u_accept, dtype=f64),
        torch.tensor(u_sample, dtype=f64),
    )


def _crafted() -> list[tuple[str, Inputs]]:
    """One sequence each, k = 1 and V = 3 (12 numbers, so a failure shows the input)."""
    q = [[[0.2, 0.6, 0.2]]]
    return [
        (
            "one draft, accepted: the bonus comes from p[:, 1]",
            _tensors(
                [[0]], [[[0.5, 0.3, 0.2]]], [[[0.6, 0.2, 0.2], [0.1, 0.3, 0.6]]], [[0.9]], [0.5]
            ),
        ),
        (
            "one draft, rejected: resample from max(0, p - q), normalised",
            _tensors([[1]], q, [[[0.4, 0.3, 0.3], [0.3, 0.3, 0.4]]], [[0.7]], [0.25]),
        ),
        (
            "one draft, rejected: the residual, not p",
            _tensors([[1]], q, [[[0.4, 0.3, 0.3], [0.3, 0.3, 0.4]]], [[0.7]], [0.5]),
        ),
        (
            "one draft the target rules out (p(x) = 0): always rejected",
            _tensors(
                [[2]], [[[0.3, 0.3, 0.4]]], [[[0.5, 0.5, 0.0], [0.2, 0.5, 0.3]]], [[0.05]], [0.65]
            ),
        ),
        (
            "one draft whose q equals p: always accepted",
            _tensors([[1]], q, [[[0.2, 0.6, 0.2], [0.5, 0.25, 0.25]]], [[0.95]], [0.6]),
        ),
    ]


@functools.cache
def fixed_exact_cases() -> tuple[Case, ...]:
    """The crafted cases, then a batch of each kind from ``_FIXED_SEED``: the same in
    every plan, so built once per process."""
    gen = torch.Generator().manual_seed(_FIXED_SEED)
    crafted = [_case(label, *args, drawn=False) for label, args in _crafted()]
    batches = [
        _batch(gen, kind, batch, k, vocab, drawn=False)
        for kind, (batch, k, vocab) in zip(KINDS, _FIXED_SIZES, strict=True)
    ]
    return (*crafted, *batches)


@functools.cache
def statistical_case() -> Case:
    """``STAT_SEQUENCES`` sequences with ``STAT_Q`` and ``STAT_P`` in every row, drafts
    drawn from q, from a fixed seed: the same in every plan (built once per process).  The
    slips' outputs are left to ``explained_statistical_case``: a right result never needs
    them, and working them out takes seconds."""
    gen = torch.Generator().manual_seed(_STAT_SEED)
    q_rows = torch.tensor(STAT_Q, dtype=torch.float64)
    p_rows = torch.tensor(STAT_P, dtype=torch.float64)
    q = q_rows.expand(STAT_SEQUENCES, *q_rows.shape).contiguous()
    p = p_rows.expand(STAT_SEQUENCES, *p_rows.shape).contiguous()
    k = q_rows.shape[0]
    draft = inverse_cdf(q, torch.rand(STAT_SEQUENCES, k, generator=gen, dtype=torch.float64))
    u_accept, u_sample = draw_uniforms(gen, draft, q, p)
    return _case(STAT_LABEL, draft, q, p, u_accept, u_sample, drawn=False, explained=False)


@functools.cache
def explained_statistical_case() -> Case:
    """The statistical batch with the listed slips' outputs, to name a wrong result's cause."""
    case = statistical_case()
    return dataclasses.replace(case, mistakes=_mistakes(case.args, case.expected))


@functools.cache
def statistical_call() -> Call:
    """The statistical batch as the sandbox receives it."""
    case = statistical_case()
    return Call(FUNCTION, tuple(to_raw(a) for a in case.args), case.label, trace=case.trace)


# ---- the statistical check --------------------------------------------------------------


@dataclass(frozen=True)
class Expectation:
    """One test of the statistical check: what it counts, over which sequences, and the
    probability of each bin under the rule."""

    what: str
    over: str
    probabilities: tuple[float, ...]


def stat_expectations() -> tuple[Expectation, ...]:
    """What the rule guarantees, from ``STAT_P`` and ``STAT_Q`` alone.  A sequence emits
    n + 1 tokens when its first n drafts are accepted and then one is rejected (or n = k),
    and draft i is accepted with probability ``alpha_i = sum(min(p_i, q_i))`` when it was
    drawn from ``q_i``, independently of the others; the token at position j of a sequence
    that reaches j follows ``p_j`` (the accepted draft ``min(p, q)`` plus the residual
    ``(1 - alpha) * max(0, p - q) / (1 - alpha)``, or the bonus)."""
    alphas = [sum(map(min, pi, qi)) for pi, qi in zip(STAT_P, STAT_Q, strict=False)]
    lengths, reach = [], 1.0
    for alpha in alphas:
        lengths.append(reach * (1 - alpha))
        reach *= alpha
    lengths.append(reach)
    counted = Expectation(
        "the number of tokens each sequence emits", "over all {n:,} sequences", tuple(lengths)
    )
    return (
        counted,
        *(
            Expectation(f"the token at position {j}", "among the {n:,} that emit one", row)
            for j, row in enumerate(STAT_P)
        ),
    )


STAT_TESTS = len(STAT_P) + 1
#: the level each test must stay above (Bonferroni: ``ALPHA`` over all of them)
STAT_LEVEL = ALPHA / STAT_TESTS


def stat_counts(got: torch.Tensor) -> list[list[int]] | str:
    """The counts each test takes from a well-formed result (every row 1..k+1 tokens in
    0..V-1, then -1), or what is wrong with the first row that is not."""
    k, vocab = len(STAT_Q), len(STAT_P[0])
    positions = torch.arange(k + 1)
    fill = got == -1
    lengths = (~fill).sum(dim=1)
    emitted = positions < lengths.unsqueeze(1)
    in_range = int(got.min()) >= -1 and int(got.max()) < vocab
    if not (in_range and torch.equal(emitted, ~fill) and int(lengths.min()) >= 1):
        ok = ((got >= 0) & (got < vocab)).long().cumprod(dim=1).sum(dim=1)
        ok = (ok >= 1) & ((positions < ok.unsqueeze(1)) | fill).all(dim=1)
        row = int((~ok).nonzero()[0, 0])
        return (
            f"row {row} of the statistical batch is {got[row].tolist()}: each row must be 1 "
            f"to {k + 1} tokens in 0..{vocab - 1}, then -1 in every place after them"
        )
    bins = torch.where(emitted, positions * vocab + got, (k + 1) * vocab)  # one bin unused
    by_position = torch.bincount(bins.flatten(), minlength=(k + 1) * vocab + 1)[:-1]
    lengths_seen = torch.bincount(lengths - 1, minlength=k + 1).tolist()
    return [lengths_seen, *by_position.view(k + 1, vocab).tolist()]


def statistical_check(result: CallResult | None) -> Check:
    """The statistical batch's tokens against what the rule guarantees."""
    shape = (STAT_SEQUENCES, len(STAT_Q) + 1)
    got = from_raw(result.tensor) if result is not None and result.tensor is not None else None
    if got is None or tuple(got.shape) != shape or got.dtype != torch.int64:
        return Check(
            STAT_CHECK,
            False,
            f"not checked: it needs the statistical batch's result, a {shape} int64 tensor",
            checked=False,
        )
    counts = stat_counts(got)
    if isinstance(counts, str):
        return Check(STAT_CHECK, False, counts)
    tests = [
        (expectation, n, chi_square(n, expectation.probabilities))
        for expectation, n in zip(stat_expectations(), counts, strict=True)
    ]
    expectation, n, worst = min(tests, key=lambda t: t[2].p_value)
    if worst.p_value >= STAT_LEVEL:
        return Check(
            STAT_CHECK,
            True,
            f"{STAT_SEQUENCES:,} sequences drafted from q: the number of tokens each emits and "
            f"the token at each of the {len(STAT_P)} positions follow what the rule "
            f"guarantees ({STAT_TESTS} chi-square tests, smallest p-value "
            f"{worst.p_value:.2g}; each must stay above {STAT_LEVEL:.0e})",
        )
    return Check(STAT_CHECK, False, _departure(expectation, n, worst))


def _departure(expectation: Expectation, counts: list[int], test: ChiSquare) -> str:
    """Which test failed, how badly, and the counts it saw."""
    what = f"{expectation.what} ({expectation.over.format(n=sum(counts))})"
    if test.impossible:
        token = test.impossible[0]
        return (
            f"{what} was {token} {counts[token]:,} times: the target gives that token "
            f"probability 0 there"
        )
    shown = "below 1e-300" if test.p_value == 0 else f"{test.p_value:.2g}"
    expected = [round(pr * sum(counts)) for pr in expectation.probabilities]
    return (
        f"{what} does not follow what the rule guarantees: counts {counts}, expected about "
        f"{expected}; chi-square {test.statistic:.1f} on {test.df} degrees of freedom, p-value "
        f"{shown}, below the {STAT_LEVEL:.0e} each of the {STAT_TESTS} tests must stay above"
    )
