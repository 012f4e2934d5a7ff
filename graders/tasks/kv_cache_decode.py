"""Grader for inference-engine/kv-cache-decode: one decode step of GPT-2 attention against a
KV cache.

The learner's ``decode_step`` gets the new token's input ``x`` (B, C), the cache buffers
``k_cache`` and ``v_cache`` (B, n_head, T, head_dim) whose slots before ``pos`` hold the keys
and values of the earlier tokens and whose slots from ``pos`` on hold NaN, the layer's
weights in GPT-2's Conv1D layout (``x @ w``), and ``n_head``; it returns one tensor
``stack([y, k_new, v_new], dim=1)``.

The grader draws the earlier tokens itself, projects them through the layer to fill the
cache and never passes them, so a solution cannot recompute the prefix: it must use the
cache.  The expected ``y`` is full causal attention over the whole sequence (the prefix and
the new token) at its last position, in float64 with ``scaled_dot_product_attention``; the
NaN beyond ``pos`` makes any read of an unfilled slot show.  Failing results are compared
with what the usual slips return, computed here on the same (poisoned) inputs.

The speed trial races the learner against ``graders/speed/decode_step.py`` at GPT-2 small's
size, then times a batch of 16 sequences; the verdict says how much of the host's bandwidth
the step reached and what batching bought.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Literal

import torch
import torch.nn.functional as F

from graders.base import BatchedRun, Check, HostPeak, Plan, SpeedResult, TrialOutcome, Verdict
from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.declaration import Declaration, Speed
from graders.draws import draw_int
from graders.speed import decode_step as speed_reference
from sandbox.api import SandboxResult

DECLARATION = Declaration(
    functions=(
        "decode_step(x, k_cache, v_cache, pos, w_qkv, b_qkv, w_proj, b_proj, n_head) -> Tensor",
    ),
    speed=Speed("decode_step", "decode_step", batch=16),
)

FUNCTION = "decode_step"
#: float32 results within ATOL + RTOL * |expected| of the float64 reference, as the prompt says
RTOL = 1e-4
ATOL = 1e-5
_FIXED_SEED = 20261204

LIBRARY_ATTENTION = frozenset(
    {"scaled_dot_product_attention", "multi_head_attention_forward", "flex_attention"}
    | {"MultiheadAttention", "multiheadattention", "_fused_sdp_choice"}
    | {"_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention"}
    | {"_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention"}
    | {"_scaled_dot_product_cudnn_attention", "_scaled_dot_product_fused_attention_overrideable"}
)
HINT = (
    "qkv = x @ w_qkv + b_qkv, split into q, k, v (in that order) of width C; head h is "
    "columns h·head_dim … (h+1)·head_dim of each. Per head, the new query attends to the "
    "cached keys k_cache[:, h, :pos] and to its own new key, scores scaled by "
    "1/sqrt(head_dim), softmax, then the same weights on v_cache[:, h, :pos] and the new "
    "value; merge the heads, y = that @ w_proj + b_proj; return "
    "torch.stack([y, k_new, v_new], dim=1) in float32."
)
_UNFILLED = (
    "y is NaN: your attention read cache slots that hold no key yet (every slot from pos on "
    "is NaN here, as unwritten memory may hold anything). Attend to the cached positions "
    "0 … pos-1 only (k_cache[:, :, :pos], v_cache[:, :, :pos]) and to the new token's own "
    "key and value, computed from x: not to all T slots of the buffer, not to slot pos of "
    "the cache in place of the new key (unless you write it there first), and not to a "
    "masked buffer, since a weight of 0 times NaN is still NaN."
)
_LAYOUT = (
    "y is NaN whenever something is cached: the cache seems to be read in another layout, "
    "such as (B, T, n_head, head_dim), so slots that hold no key yet (NaN here) got mixed "
    "in. The buffers are (B, n_head, T, head_dim): head h's cached keys are "
    "k_cache[:, h, :pos], with no reshape or transpose."
)
_NONFINITE = (
    "y has NaN or inf where every answer is finite. The cache's slots from pos on hold NaN "
    "(unfilled memory): read only k_cache[:, :, :pos] and v_cache[:, :, :pos], and take the "
    "new key and value from x."
)
_NOT_STACKED = (
    "build and return a torch.Tensor instead",
    "stack them into one tensor as the prompt says: torch.stack([y, k_new, v_new], dim=1)",
)
PASSED_FEEDBACK = (
    "Your decode step matches full causal attention over the whole sequence without ever "
    "seeing the earlier tokens: the cache is all a generating model keeps of them. Each new "
    "token must read every weight once and its whole cache for about one multiply-add per "
    "number read, far below any GPU's ridge point: that is why decode is bandwidth-bound "
    "there, and why batching pays, the sequences of a batch sharing one read of the weights."
)


@dataclass(frozen=True)
class Step:
    """One decode step's sizes: ``pos`` tokens cached in a buffer of ``length`` slots."""

    batch: int
    width: int  # C
    n_head: int
    pos: int
    length: int  # T

    @property
    def head_dim(self) -> int:
        return self.width // self.n_head

    @property
    def label(self) -> str:
        heads = f"{self.n_head} head{'s' if self.n_head > 1 else ''} of {self.head_dim}"
        return (
            f"batch {self.batch}, C {self.width}, {heads}, pos {self.pos}, cache of "
            f"{self.length} slots"
        )


class KvCacheDecode(CaseGrader):
    declaration = DECLARATION
    forbidden = MappingProxyType({FUNCTION: LIBRARY_ATTENTION})
    forbidden_what = "a library attention routine"
    hints = MappingProxyType({FUNCTION: HINT})
    nonfinite_hint = _NONFINITE
    passed_feedback = PASSED_FEEDBACK

    def fixed_cases(self, device: str) -> list[Case]:
        """Every listed slip fails these, the same in every plan: nothing cached (pos 0,
        where reading any slot is reading NaN), a full buffer but for the new slot, several
        heads with an odd head_dim, a batch of three."""
        gen = torch.Generator().manual_seed(_FIXED_SEED)
        steps = (
            (Step(2, 24, 3, 0, 5), "nothing cached yet"),
            (Step(1, 32, 4, 7, 8), "the buffer full but for the new slot (pos = T - 1)"),
            (Step(2, 15, 3, 4, 9), "odd head_dim"),
            (Step(3, 16, 2, 5, 10), "three sequences"),
            (Step(1, 24, 4, 1, 3), "one token cached"),
        )
        return [_case(_draw(gen, step), what, drawn=False) for step, what in steps]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Random sizes: one to four heads (a single head too), head_dim 2 to 16, odd ones
        included, up to 12 cached tokens, sometimes a buffer with no spare slot."""
        size = partial(draw_int, gen)
        cases = []
        for what in ("drawn", "drawn", "drawn", "drawn, the buffer full but for the new slot"):
            n_head = size(1, 4)
            width = n_head * size(2, 16)
            pos = size(1, 12)
            length = pos + 1 if what.endswith("slot") else pos + size(2, 6)
            step = Step(size(1, 3), width, n_head, pos, length)
            cases.append(_case(_draw(gen, step), what))
        return cases

    def judge(self, task: str, plan: Plan, result: SandboxResult, source: str) -> Verdict:
        """The base class's verdict, with a returned tuple or list told to stack its parts."""
        verdict = super().judge(task, plan, result, source)
        checks = tuple(_stacking(check) for check in verdict.checks)
        return dataclasses.replace(verdict, checks=checks)

    def judge_speed(self, verdict: Verdict, trial: TrialOutcome, peak: HostPeak) -> Verdict:
        """The base class's speed notes, with what the step read and how fast, right after
        the bound sentence."""
        judged = super().judge_speed(verdict, trial, peak)
        if trial.result is None or judged.speed is None:
            return judged
        note = decode_note(trial.result, peak)
        if note is None:
            return judged
        notes = list(judged.notes)
        bound = judged.speed.bound_sentence
        speed = next((i for i, n in enumerate(notes) if n.startswith("Speed: ")), len(notes))
        after = notes.index(bound) + 1 if bound in notes else speed + 1
        notes.insert(after, note)
        return dataclasses.replace(judged, notes=tuple(notes))

    def batching_note(self, single: SpeedResult, batched: BatchedRun) -> str:
        """What a step for ``batched.batch`` sequences cost against one (the learner's
        median calls), and the tokens per second that buys."""
        if batched.result is None:
            return super().batching_note(single, batched)
        cost = batched.result.learner_s / single.learner_s
        return (
            f"Batching: {batched.batch} sequences per step cost {cost:.1f}× one: "
            f"{batched.batch / cost:.1f}× the tokens/s."
        )


def decode_note(result: SpeedResult, peak: HostPeak) -> str | None:
    """The step's bytes (the reference's weights and one sequence's cache), the time of the
    fastest timed call, its GB/s and the share of the host's bandwidth roof; None when the
    trial carries no figures."""
    if not result.moved_bytes or not result.achieved_gbs:
        return None
    weights = speed_reference.weight_bytes(speed_reference.C)
    cache = speed_reference.cache_bytes(1, speed_reference.POS, speed_reference.C)
    seconds = result.moved_bytes / (result.achieved_gbs * 1e9)
    note = (
        f"Decode step: {result.moved_bytes / 1e6:.1f} MB read ({weights / 1e6:.1f} MB of "
        f"weights, {cache / 1e6:.1f} MB of cache) in {_duration(seconds)}: "
        f"{_rate(result.achieved_gbs)} GB/s"
    )
    if peak.gbs:
        note += f", {result.achieved_gbs / peak.gbs:.0%} of {_roof(peak, peak.gbs)}"
    return note + "."


def _duration(seconds: float) -> str:
    if seconds >= 1e-4:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def _rate(gbs: float) -> str:
    return f"{gbs:,.0f}" if gbs >= 100 else f"{gbs:.1f}"


def _roof(peak: HostPeak, gbs: float) -> str:
    """The bandwidth roof as the bound sentence words it (``graders.bottleneck``)."""
    if peak.device == "cuda":
        return f"{peak.source or 'the datasheet'} {gbs:,.0f} GB/s"
    return f"this worker's measured {gbs:.3g} GB/s"


def _stacking(check: Check) -> Check:
    said, instead = _NOT_STACKED
    returned = ("returned a tuple;", "returned a list;")
    if check.passed or not any(r in check.message for r in returned):
        return check
    return dataclasses.replace(check, message=check.message.replace(said, instead))


# -- the draw: prefix tokens projected into the cache, never passed --------------------------


@dataclass(frozen=True)
class Drawn:
    step: Step
    prefix: torch.Tensor  # (B, pos, C) float32: the earlier tokens, kept on this side
    x: torch.Tensor  # (B, C) float32
    w_qkv: torch.Tensor
    b_qkv: torch.Tensor
    w_proj: torch.Tensor
    b_proj: torch.Tensor
    k_cache: torch.Tensor  # (B, n_head, T, head_dim) float32, NaN from pos on
    v_cache: torch.Tensor

    def args(self) -> tuple[torch.Tensor, ...]:
        """What the learner's function is called with, in the interface's order."""
        s = self.step
        return (
            self.x,
            self.k_cache,
            self.v_cache,
            torch.tensor(s.pos, dtype=torch.int64),
            self.w_qkv,
            self.b_qkv,
            self.w_proj,
            self.b_proj,
            torch.tensor(s.n_head, dtype=torch.int64),
        )


def _draw(gen: torch.Generator, step: Step) -> Drawn:
    """Weights scaled so every activation is of order one (and attention far from uniform),
    the earlier tokens and the new one, and the cache filled from the earlier tokens."""
    b, c, t = step.batch, step.width, step.length

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float32)

    w_qkv = randn(c, 3 * c) * (1.5 / math.sqrt(c))
    b_qkv = randn(3 * c) * 0.2
    w_proj = randn(c, c) / math.sqrt(c)
    b_proj = randn(c) * 0.2
    prefix, x = randn(b, step.pos, c), randn(b, c)
    _, keys, values = _heads(_project(prefix.double(), w_qkv.double(), b_qkv.double()), step)
    k_cache = torch.full((b, step.n_head, t, step.head_dim), math.nan)
    v_cache = torch.full((b, step.n_head, t, step.head_dim), math.nan)
    k_cache[:, :, : step.pos] = keys.float()
    v_cache[:, :, : step.pos] = values.float()
    return Drawn(step, prefix, x, w_qkv, b_qkv, w_proj, b_proj, k_cache, v_cache)


def _project(tokens: torch.Tensor, w_qkv: torch.Tensor, b_qkv: torch.Tensor) -> torch.Tensor:
    return tokens @ w_qkv + b_qkv


def _heads(qkv: torch.Tensor, step: Step) -> tuple[torch.Tensor, ...]:
    """(B, L, 3C) -> q, k, v as (B, n_head, L, head_dim)."""
    b, length, _ = qkv.shape
    return tuple(
        part.reshape(b, length, step.n_head, step.head_dim).transpose(1, 2)
        for part in qkv.split(step.width, dim=-1)
    )


def expected_step(drawn: Drawn) -> torch.Tensor:
    """The trusted answer, in float64: full causal attention over the earlier tokens and the
    new one (``scaled_dot_product_attention``), at the last position; the new token's key
    and value, heads concatenated."""
    s = drawn.step
    w_qkv, b_qkv = drawn.w_qkv.double(), drawn.b_qkv.double()
    sequence = torch.cat((drawn.prefix.double(), drawn.x.double()[:, None]), dim=1)
    qkv = _project(sequence, w_qkv, b_qkv)
    q, k, v = _heads(qkv, s)
    attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    last = attended[:, :, -1].reshape(s.batch, s.width)
    y = last @ drawn.w_proj.double() + drawn.b_proj.double()
    _, k_new, v_new = qkv[:, -1].split(s.width, dim=-1)
    return torch.stack([y, k_new, v_new], dim=1)


# -- the usual slips, each computed on the very inputs the learner gets (NaN and all) -------

Span = Literal["filled", "through pos", "all", "layout"]


@dataclass(frozen=True)
class Slip:
    """A decode step written out in float64, with the knobs the usual slips turn."""

    span: Span = "filled"  # which cached slots are attended to
    new_token: bool = True  # whether the new key and value join them
    divisor: Callable[[int, int], float] = lambda c, d: math.sqrt(d)
    order: tuple[int, int, int] = (0, 1, 2)  # which third of qkv is q, k, v
    per_head: bool = False  # qkv split per head, (n_head, 3, head_dim): Megatron's layout
    qkv_bias: bool = True
    returned_bias: bool = True  # k_new and v_new returned with the bias
    projection: bool = True
    projection_bias: bool = True
    swapped: bool = False  # k_new and v_new swapped in the result

    def output(self, args: Sequence[torch.Tensor]) -> torch.Tensor:
        x, k_cache, v_cache, pos, w_qkv, b_qkv, w_proj, b_proj, n_head = args
        b, c = x.shape
        h, p = int(n_head), int(pos)
        d = c // h
        plain = x @ w_qkv
        qkv = plain + b_qkv if self.qkv_bias else plain
        parts = self._split(qkv, h, d)
        q, k, v = (parts[i] for i in self.order)
        keys = self._cached(k_cache, p, h, d)
        values = self._cached(v_cache, p, h, d)
        if self.new_token:
            keys = torch.cat((keys, k.reshape(b, h, 1, d)), dim=2)
            values = torch.cat((values, v.reshape(b, h, 1, d)), dim=2)
        scores = q.reshape(b, h, 1, d) @ keys.transpose(-2, -1) / self.divisor(c, d)
        y = (torch.softmax(scores, dim=-1) @ values).reshape(b, c)
        if self.projection:
            y = y @ w_proj + (b_proj if self.projection_bias else 0.0)
        if not self.returned_bias:
            k, v = (self._split(plain, h, d)[i] for i in self.order[1:])
        if self.swapped:
            k, v = v, k
        return torch.stack([y, k, v], dim=1)

    def _split(self, qkv: torch.Tensor, h: int, d: int) -> tuple[torch.Tensor, ...]:
        if self.per_head:
            grouped = qkv.reshape(qkv.shape[0], h, 3, d)
            return tuple(grouped[:, :, i].reshape(qkv.shape[0], h * d) for i in range(3))
        return tuple(qkv.split(h * d, dim=-1))

    def _cached(self, cache: torch.Tensor, p: int, h: int, d: int) -> torch.Tensor:
        b, _, t, _ = cache.shape
        if self.span == "through pos":
            return cache[:, :, : p + 1]
        if self.span == "all":
            return cache
        if self.span == "layout":  # the buffer read as if it were (B, T, n_head, head_dim)
            return cache.reshape(b, t, h, d)[:, :p].transpose(1, 2)
        return cache[:, :, :p]


_QKV = "qkv"


def _order_slip(order: tuple[int, int, int]) -> tuple[str, Slip]:
    named = ", ".join(_QKV[i] for i in order)
    return (
        f"you split qkv as ({named}); GPT-2's c_attn gives q, k, v in that order: "
        "q = qkv[:, :C], k = qkv[:, C:2C], v = qkv[:, 2C:].",
        Slip(order=order),
    )


#: the usual slips, each with what the learner who made it should read; where two return the
#: same, the first is named, so the layout (which still gets pos = 0 right) comes before the
#: reads of unfilled slots (which do not)
SLIPS: tuple[tuple[str, Slip], ...] = (
    (_LAYOUT, Slip(span="layout")),
    (_UNFILLED, Slip(span="through pos", new_token=False)),
    (
        "the new token did not attend to itself: its query must see the cached keys 0 … pos-1 "
        "and its own new key (and weigh its own new value), pos + 1 keys in all.",
        Slip(new_token=False),
    ),
    (
        "you divided the scores by sqrt(C); divide by sqrt(head_dim), with head_dim = C / n_head.",
        Slip(divisor=lambda c, d: math.sqrt(c)),
    ),
    (
        "you divided the scores by head_dim; divide by its square root.",
        Slip(divisor=lambda c, d: d),
    ),
    (
        "that is attention without the 1/sqrt(head_dim) scale; divide the scores by it.",
        Slip(divisor=lambda c, d: 1.0),
    ),
    *(_order_slip(order) for order in itertools.permutations(range(3)) if order != (0, 1, 2)),
    (
        "you split qkv per head, as (n_head, 3, head_dim) (Megatron's layout); GPT-2's c_attn "
        "puts all of q first, then all of k, then all of v, each C wide and head-major.",
        Slip(per_head=True),
    ),
    (
        "the output projection is missing: y = (merged heads) @ w_proj + b_proj.",
        Slip(projection=False),
    ),
    (
        "the output projection's bias is missing: y = (merged heads) @ w_proj + b_proj.",
        Slip(projection_bias=False),
    ),
    (
        "qkv is missing its bias: qkv = x @ w_qkv + b_qkv, before the split.",
        Slip(qkv_bias=False),
    ),
    (
        "the attention is right, but the k_new and v_new you returned lack their bias: return "
        "the key and value as they come out of qkv = x @ w_qkv + b_qkv.",
        Slip(returned_bias=False),
    ),
    (
        "k_new and v_new are swapped: out[:, 1] is the new key, out[:, 2] the new value.",
        Slip(swapped=True),
    ),
)


def _case(sample: Drawn, what: str, *, drawn: bool = True) -> Case:
    args = sample.args()
    wide = tuple(a.double() if a.is_floating_point() else a for a in args)
    mistakes = tuple(Mistake(slip.output(wide).to(torch.float32), why) for why, slip in SLIPS)
    return Case(
        FUNCTION,
        args,
        expected_step(sample).to(torch.float32),
        f"{what}: {sample.step.label}",
        rtol=RTOL,
        atol=ATOL,
        mistakes=mistakes,
        drawn=drawn,
    )
