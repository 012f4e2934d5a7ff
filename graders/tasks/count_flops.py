"""Grader for flops-accounting/count-flops: the matmul FLOPs of a GPT-2 forward pass and the
bytes one decode step reads, counted exactly by the rule the task states.

The rule: a product of an (m x k) and a (k x n) matrix costs 2·m·k·n FLOPs; a layer has six
(QKV, Q·Kᵀ, attention·V, the output projection, the MLP's two), the attention pair counted
in full over the seq x seq scores; the LM head runs at every position; nothing else counts.
A decode step reads every parameter once (the tied LM head is the token embedding, once)
plus the batch's KV cache for the ``pos`` positions before the new token.  Both counts are
integers well below 2**53, so int64 (and float64) arithmetic is exact and the comparison is
exact too.

The grader trusts its formula only as far as torch agrees with it: the count of every fixed
case is checked against ``torch.utils.flop_counter.FlopCounterMode`` over a GPT-2 built here
(run for real where it is tiny, on meta tensors for GPT-2 small), and every weight and
KV-cache count against that model's parameters and the keys and values it caches, once per
process.  A disagreement is the grader's bug, raised before any submission is judged.  The
drawn cases use the same formula unmeasured (a meta forward pass costs about 10 ms a layer);
the tests measure the drawn shapes of many seeds too.

Configurations arrive as int64 tensors because sandbox calls take tensors only.  The fixed
cases use sizes made of distinct primes (and GPT-2 small), so that no listed slip agrees
with the rule or with another slip on them; the usual slips are named by what they return.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.declaration import Declaration
from graders.draws import draw_int

DECLARATION = Declaration(
    functions=(
        "forward_flops(config, batch, seq) -> Tensor",
        "decode_step_bytes(config, batch, pos, bytes_per_element) -> Tensor",
    ),
)

#: the largest sizes drawn (the prompt states them); every count stays below 2**53
MAX_LAYERS = 12
MAX_EMBD = 1024
MAX_CTX = 2048
MAX_BATCH = 32
MAX_VOCAB = 60_000
BYTES_PER_ELEMENT = (1, 2, 4)

FORBIDDEN = MappingProxyType({"forward_flops": frozenset({"FlopCounterMode", "flop_counter"})})
HINTS = MappingProxyType(
    {
        "forward_flops": (
            "Per layer, with t = batch * seq tokens and C = n_embd: 2*t*C*3C (QKV) + "
            "2*batch*seq*seq*C (Q·Kᵀ, in full) + 2*batch*seq*seq*C (attention·V) + 2*t*C*C "
            "(output projection) + 2*t*C*4C + 2*t*4C*C (MLP); times n_layer; plus "
            "2*t*C*vocab_size for the LM head. Return torch.tensor(total), a 0-d int64 tensor."
        ),
        "decode_step_bytes": (
            "(every parameter once: vocab_size*C + n_ctx*C + n_layer*(12*C*C + 13*C) + 2*C) "
            "+ (KV cache: 2 * n_layer * batch * pos * C), all times bytes_per_element. "
            "Return torch.tensor(total), a 0-d int64 tensor."
        ),
    }
)
PASSED_FEEDBACK = (
    "Both counts are exact. Per token, GPT-2 small's forward pass is about 2.85e8 FLOPs at a "
    "full 1024-token context, while one decode step at batch 1 reads its 249 MB of bf16 "
    "weights to make a single token: about one FLOP per byte, which is why decode is "
    "memory-bound and why batching (one read of the weights for many tokens) pays. The "
    "inference-engine quest builds on these two numbers."
)


@dataclass(frozen=True)
class Gpt2Shape:
    """The sizes of a GPT-2 model, in the order the ``config`` tensor carries them."""

    n_layer: int
    n_head: int
    n_embd: int
    vocab_size: int
    n_ctx: int

    def tensor(self) -> torch.Tensor:
        values = (self.n_layer, self.n_head, self.n_embd, self.vocab_size, self.n_ctx)
        return torch.tensor(values, dtype=torch.int64)

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    @property
    def label(self) -> str:
        return (
            f"{_counted(self.n_layer, 'layer')}, {_counted(self.n_head, 'head')}, "
            f"n_embd {self.n_embd}, vocab {self.vocab_size}, n_ctx {self.n_ctx}"
        )


def _counted(n: int, thing: str) -> str:
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"


GPT2_SMALL = Gpt2Shape(n_layer=12, n_head=12, n_embd=768, vocab_size=50257, n_ctx=1024)
#: distinct primes (n_embd = 5 heads of 11), none 2: every listed slip differs from the
#: rule and from every other slip on it (batch 7, seq 13, pos 13)
PRIMES = Gpt2Shape(n_layer=3, n_head=5, n_embd=55, vocab_size=101, n_ctx=53)
#: a second such shape, with another batch, for cover
PRIMES_2 = Gpt2Shape(n_layer=5, n_head=3, n_embd=39, vocab_size=97, n_ctx=37)


# -- the rule, and the usual slips of it ---------------------------------------------------

Attention = Literal["full", "one product", "causal", "none", "one head", "n_ctx keys", "kaplan"]


@dataclass(frozen=True)
class ForwardCount:
    """How the forward FLOPs are counted: the rule, or the rule with one slip."""

    per_product: int = 2  # FLOPs per multiply-add: the rule's 2·m·k·n
    qkv_width: int = 3  # the QKV projection's output, in units of n_embd
    mlp_width: int = 4
    attention: Attention = "full"
    lm_head: Literal["every position", "last position", "none"] = "every position"
    layers: Literal["n_layer", "one"] = "n_layer"
    sequences: Literal["batch", "one"] = "batch"

    def __call__(self, shape: Gpt2Shape, batch: int, seq: int) -> int:
        b = batch if self.sequences == "batch" else 1
        c, t = shape.n_embd, b * seq

        def product(m: int, k: int, n: int) -> int:
            return self.per_product * m * k * n

        projections = (
            product(t, c, self.qkv_width * c)
            + product(t, c, c)
            + product(t, c, self.mlp_width * c)
            + product(t, self.mlp_width * c, c)
        )
        layers = shape.n_layer if self.layers == "n_layer" else 1
        positions = {"every position": t, "last position": b, "none": 0}[self.lm_head]
        lm_head = product(positions, c, shape.vocab_size)
        return layers * (projections + self._attention(shape, b, seq)) + lm_head

    def _attention(self, shape: Gpt2Shape, b: int, seq: int) -> int:
        """Q·Kᵀ and attention·V over every sequence and head."""
        heads, d, p = shape.n_head, shape.head_dim, self.per_product
        full_pair = 2 * b * heads * p * seq * d * seq
        if self.attention == "full":
            return full_pair
        if self.attention == "one product":
            return full_pair // 2
        if self.attention == "causal":  # query i meets keys 0..i: seq(seq+1)/2 scores
            return 2 * b * heads * p * d * (seq * (seq + 1) // 2)
        if self.attention == "one head":
            return 2 * b * p * seq * d * seq
        if self.attention == "n_ctx keys":
            return 2 * b * heads * p * seq * d * shape.n_ctx
        if self.attention == "kaplan":  # 2 · n_ctx · d_model per token and layer
            return b * seq * p * shape.n_ctx * shape.n_embd
        return 0


@dataclass(frozen=True)
class DecodeCount:
    """How a decode step's bytes are counted: the rule, or the rule with one slip."""

    weights: Literal["all", "untied head", "no position embedding", "matrices", "kaplan"] = "all"
    weight_reads: Literal["once", "per sequence"] = "once"
    cached: Literal["pos", "pos + 1", "n_ctx", "none"] = "pos"
    kv_tensors: int = 2
    kv_layers: Literal["n_layer", "one"] = "n_layer"
    kv_sequences: Literal["batch", "one"] = "batch"
    kv_heads: Literal["all", "one"] = "all"
    bytes: Literal["per element", "elements"] = "per element"

    def __call__(self, shape: Gpt2Shape, batch: int, pos: int, bytes_per_element: int) -> int:
        reads = batch if self.weight_reads == "per sequence" else 1
        weights = reads * self._weights(shape)
        positions = {"pos": pos, "pos + 1": pos + 1, "n_ctx": shape.n_ctx, "none": 0}
        layers = shape.n_layer if self.kv_layers == "n_layer" else 1
        sequences = batch if self.kv_sequences == "batch" else 1
        width = shape.n_embd if self.kv_heads == "all" else shape.head_dim
        cache = self.kv_tensors * layers * sequences * positions[self.cached] * width
        size = bytes_per_element if self.bytes == "per element" else 1
        return (weights + cache) * size

    def _weights(self, shape: Gpt2Shape) -> int:
        c, layers = shape.n_embd, shape.n_layer
        if self.weights == "kaplan":
            return 12 * layers * c * c
        matrices = shape.vocab_size * c + shape.n_ctx * c + layers * 12 * c * c
        if self.weights == "matrices":
            return matrices
        everything = matrices + layers * 13 * c + 2 * c  # biases, ln_1, ln_2, then ln_f
        if self.weights == "untied head":
            return everything + shape.vocab_size * c
        if self.weights == "no position embedding":
            return everything - shape.n_ctx * c
        return everything


FORWARD = ForwardCount()
DECODE = DecodeCount()

#: the usual slips of forward_flops, each with what the learner who made it should read
FORWARD_MISTAKES: tuple[tuple[str, ForwardCount], ...] = (
    (
        "you counted m·k·n per matrix product; each term is a multiply and an add, so a "
        "product costs 2·m·k·n FLOPs.",
        ForwardCount(per_product=1),
    ),
    (
        "you left out the attention products Q·Kᵀ and attention·V: they multiply two "
        "activations rather than a weight, but they are matmuls, 2·batch·seq²·n_embd each "
        "per layer.",
        ForwardCount(attention="none"),
    ),
    (
        "your attention term is half the rule's: you counted only one of Q·Kᵀ and "
        "attention·V, or halved both for the causal mask. Count both, in full: "
        "2·batch·seq²·n_embd each per layer.",
        ForwardCount(attention="one product"),
    ),
    (
        "you counted the attention products causally, query i against keys 0..i only; this "
        "task counts the full seq x seq scores, as a plain matmul computes them (and as "
        "FlopCounterMode counts them): 2·batch·seq²·n_embd each per layer.",
        ForwardCount(attention="causal"),
    ),
    (
        "you used Kaplan's per-token attention term 2·n_layer·n_ctx·d_model from the quiz; "
        "here both attention products count in full over the seq positions actually run: "
        "4·batch·seq²·n_embd per layer.",
        ForwardCount(attention="kaplan"),
    ),
    (
        "your attention products run over n_ctx keys; a forward pass over seq tokens has "
        "seq keys per query: 2·batch·seq²·n_embd per product and layer.",
        ForwardCount(attention="n_ctx keys"),
    ),
    (
        "you counted the attention products for one head of head_dim = n_embd / n_head; "
        "every head does them, so over all heads it is 2·batch·seq²·n_embd per product.",
        ForwardCount(attention="one head"),
    ),
    (
        "you left out the LM head, the (t x n_embd) by (n_embd x vocab_size) product that "
        "makes the logits: 2·t·n_embd·vocab_size, with t = batch·seq.",
        ForwardCount(lm_head="none"),
    ),
    (
        "you counted the LM head at the last position only (what generation needs); this "
        "forward pass makes logits at every position: 2·batch·seq·n_embd·vocab_size.",
        ForwardCount(lm_head="last position"),
    ),
    (
        "you counted one layer's products once; every one of the n_layer layers does them.",
        ForwardCount(layers="one"),
    ),
    (
        "your MLP is n_embd wide; GPT-2's is 4·n_embd: 2·t·n_embd·4n_embd up and as much down.",
        ForwardCount(mlp_width=1),
    ),
    (
        "you counted the QKV projection as one n_embd x n_embd product; it makes Q, K and "
        "V at once: 2·t·n_embd·3n_embd.",
        ForwardCount(qkv_width=1),
    ),
    (
        "you counted one sequence; the pass runs all batch sequences, so every term "
        "scales with batch.",
        ForwardCount(sequences="one"),
    ),
)
#: the usual slips of decode_step_bytes
DECODE_MISTAKES: tuple[tuple[str, DecodeCount], ...] = (
    (
        "you left out the KV cache: each step also reads the keys and values of every "
        "earlier position, 2·n_layer·batch·pos·n_embd elements.",
        DecodeCount(cached="none"),
    ),
    (
        "your KV cache holds pos + 1 positions; before the step it holds positions 0 to "
        "pos - 1, that is pos of them (the new token's key and value are computed now).",
        DecodeCount(cached="pos + 1"),
    ),
    (
        "you counted the KV cache for the whole n_ctx context; the step reads only the pos "
        "positions cached so far.",
        DecodeCount(cached="n_ctx"),
    ),
    (
        "your KV cache is missing its factor 2: every position keeps a key and a value, "
        "2·n_layer·batch·pos·n_embd elements.",
        DecodeCount(kv_tensors=1),
    ),
    (
        "your KV cache is one layer's; each of the n_layer layers caches its own keys and values.",
        DecodeCount(kv_layers="one"),
    ),
    (
        "your KV cache is one sequence's; each of the batch sequences has its own.",
        DecodeCount(kv_sequences="one"),
    ),
    (
        "your KV cache is one head's (head_dim wide); all heads together cache n_embd "
        "elements per position for K and as many for V.",
        DecodeCount(kv_heads="one"),
    ),
    (
        "you read the weights once per sequence; the whole batch shares one read of "
        "them, which is what batching buys.",
        DecodeCount(weight_reads="per sequence"),
    ),
    (
        "you counted the LM head as a matrix of its own; GPT-2 ties it to the token "
        "embedding, so those vocab_size x n_embd weights are read once.",
        DecodeCount(weights="untied head"),
    ),
    (
        "you left out the position embedding (n_ctx x n_embd); the rule counts every "
        "parameter of the model.",
        DecodeCount(weights="no position embedding"),
    ),
    (
        "you counted the weight matrices only; the biases and the LayerNorms' weights and "
        "biases are parameters too: n_layer·13·n_embd + 2·n_embd of them.",
        DecodeCount(weights="matrices"),
    ),
    (
        "you counted Kaplan's non-embedding N = 12·n_layer·n_embd² as the weights; the step "
        "reads every parameter, embeddings, biases and LayerNorms included.",
        DecodeCount(weights="kaplan"),
    ),
    (
        "this is the number of elements; multiply by bytes_per_element for the bytes.",
        DecodeCount(bytes="elements"),
    ),
)


# -- the trusted GPT-2 whose FLOPs, parameters and KV cache the counts must match ----------


class _Block(nn.Module):
    """One pre-norm GPT-2 block, weights in the ``nn.Linear`` layout."""

    def __init__(self, shape: Gpt2Shape) -> None:
        super().__init__()
        c = shape.n_embd
        self.n_head = shape.n_head
        self.ln_1 = nn.LayerNorm(c)
        self.c_attn = nn.Linear(c, 3 * c)
        self.attn_proj = nn.Linear(c, c)
        self.ln_2 = nn.LayerNorm(c)
        self.c_fc = nn.Linear(c, 4 * c)
        self.mlp_proj = nn.Linear(4 * c, c)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The block's output, and the keys and values it caches."""
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // self.n_head)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(diagonal=1)
        y = scores.masked_fill(future, float("-inf")).softmax(dim=-1) @ v
        x = x + self.attn_proj(y.transpose(1, 2).reshape(b, t, c))
        x = x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
        return x, k, v


class _Gpt2(nn.Module):
    """GPT-2 with its LM head tied to the token embedding."""

    def __init__(self, shape: Gpt2Shape) -> None:
        super().__init__()
        self.wte = nn.Embedding(shape.vocab_size, shape.n_embd)
        self.wpe = nn.Embedding(shape.n_ctx, shape.n_embd)
        self.h = nn.ModuleList(_Block(shape) for _ in range(shape.n_layer))
        self.ln_f = nn.LayerNorm(shape.n_embd)
        self.lm_head = nn.Linear(shape.n_embd, shape.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Logits at every position, and how many elements the KV cache now holds."""
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.wte(ids) + self.wpe(positions)
        cached = 0
        for block in self.h:
            x, k, v = block(x)
            cached += k.numel() + v.numel()
        return self.lm_head(self.ln_f(x)), cached


@dataclass(frozen=True)
class Measured:
    """What torch says of a GPT-2 of one shape run on ``batch`` x ``seq`` tokens."""

    flops: int  # FlopCounterMode's count of the forward pass
    parameters: int  # distinct parameters, the tied head once
    cached: int  # KV-cache elements after the pass


#: a model whose widest activation has at most this many elements runs for real
TINY = 1 << 16


def measure(shape: Gpt2Shape, batch: int, seq: int) -> Measured:
    """Run the trusted GPT-2 under ``FlopCounterMode``: for real when it is tiny, else on
    meta tensors (shapes only, no arithmetic: GPT-2 small costs a tenth of a second)."""
    device = "cpu" if batch * seq * max(4 * shape.n_embd, shape.vocab_size) <= TINY else "meta"
    with torch.device(device):
        model = _Gpt2(shape)
    ids = torch.zeros(batch, seq, dtype=torch.int64, device=device)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        _, cached = model(ids)
    parameters = sum(p.numel() for p in model.parameters())
    return Measured(int(counter.get_total_flops()), parameters, cached)


class CountDisagrees(RuntimeError):
    """The grader's count and torch's measurement differ: the grader's bug, not the
    submission's, raised before anything is judged."""


def checked_forward_flops(shape: Gpt2Shape, batch: int, seq: int) -> int:
    """The rule's count, once torch's FlopCounterMode has agreed with it."""
    counted = FORWARD(shape, batch, seq)
    measured = measure(shape, batch, seq).flops
    if counted != measured:
        raise CountDisagrees(
            f"forward_flops of {shape.label}, batch {batch}, seq {seq}: the grader counts "
            f"{counted}, FlopCounterMode {measured}"
        )
    return counted


def checked_decode_bytes(shape: Gpt2Shape, batch: int, pos: int, bytes_per_element: int) -> int:
    """The rule's count, once the trusted GPT-2's parameters and the KV cache it holds
    after ``pos`` positions have agreed with it."""
    counted = DECODE(shape, batch, pos, bytes_per_element)
    # the cache after a pass over positions 0..pos-1; nothing is cached before position 0
    measured = measure(shape, batch, max(pos, 1))
    cached = measured.cached if pos > 0 else 0
    if counted != (measured.parameters + cached) * bytes_per_element:
        raise CountDisagrees(
            f"decode_step_bytes of {shape.label}, batch {batch}, pos {pos}: the grader "
            f"counts {counted}; the model has {measured.parameters} parameters and caches "
            f"{cached} elements, at {bytes_per_element} bytes each"
        )
    return counted


# -- the cases -------------------------------------------------------------------------------


def _int(value: int) -> torch.Tensor:
    return torch.tensor(value, dtype=torch.int64)


def forward_case(
    shape: Gpt2Shape, batch: int, seq: int, label: str = "", *, measured: bool = False
) -> Case:
    """A case of ``forward_flops``; ``measured``: once FlopCounterMode agrees."""
    expected = (checked_forward_flops if measured else FORWARD)(shape, batch, seq)
    mistakes = tuple(
        Mistake(_int(wrong), why)
        for why, way in FORWARD_MISTAKES
        if (wrong := way(shape, batch, seq)) != expected
    )
    return Case(
        "forward_flops",
        (shape.tensor(), _int(batch), _int(seq)),
        _int(expected),
        f"{label}{shape.label}; batch {batch}, seq {seq}",
        mistakes=mistakes,
    )


def decode_case(
    shape: Gpt2Shape, batch: int, pos: int, size: int, label: str = "", *, measured: bool = False
) -> Case:
    """A case of ``decode_step_bytes``; ``measured``: once the trusted model agrees."""
    expected = (checked_decode_bytes if measured else DECODE)(shape, batch, pos, size)
    mistakes = tuple(
        Mistake(_int(wrong), why)
        for why, way in DECODE_MISTAKES
        if (wrong := way(shape, batch, pos, size)) != expected
    )
    return Case(
        "decode_step_bytes",
        (shape.tensor(), _int(batch), _int(pos), _int(size)),
        _int(expected),
        f"{label}{shape.label}; batch {batch}, pos {pos}, {_counted(size, 'byte')} per element",
        mistakes=mistakes,
    )


@functools.cache
def _fixed() -> tuple[Case, ...]:
    """The same in every plan, each checked against the trusted GPT-2 (the two of distinct
    primes run for real), once per process."""
    cases = (
        forward_case(PRIMES, 7, 13, "distinct primes: ", measured=True),
        forward_case(PRIMES_2, 11, 29, "distinct primes: ", measured=True),
        forward_case(GPT2_SMALL, 1, 1024, "GPT-2 small at full context: ", measured=True),
        decode_case(PRIMES, 7, 13, 2, "distinct primes: ", measured=True),
        decode_case(PRIMES_2, 11, 29, 4, "distinct primes: ", measured=True),
        decode_case(GPT2_SMALL, 1, 1000, 2, "GPT-2 small in bf16: ", measured=True),
    )
    return tuple(replace(c, drawn=False) for c in cases)


def draw_shape(gen: torch.Generator) -> Gpt2Shape:
    n_head = draw_int(gen, 1, 16)
    return Gpt2Shape(
        n_layer=draw_int(gen, 1, MAX_LAYERS),
        n_head=n_head,
        n_embd=n_head * draw_int(gen, 1, MAX_EMBD // n_head),
        vocab_size=draw_int(gen, 2, MAX_VOCAB),
        n_ctx=draw_int(gen, 1, MAX_CTX),
    )


class CountFlops(CaseGrader):
    declaration = DECLARATION
    forbidden = FORBIDDEN
    forbidden_what = "torch's own FLOP counter: count the products yourself"
    hints = HINTS
    passed_feedback = PASSED_FEEDBACK

    def fixed_cases(self, device: str) -> list[Case]:
        """Two shapes of distinct primes, where every listed slip shows, and GPT-2 small."""
        return list(_fixed())

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Two random shapes for each function, sizes up to the prompt's limits."""
        cases = []
        for _ in range(2):
            shape = draw_shape(gen)
            batch, seq = draw_int(gen, 1, MAX_BATCH), draw_int(gen, 1, shape.n_ctx)
            cases.append(forward_case(shape, batch, seq))
        for _ in range(2):
            shape = draw_shape(gen)
            batch, pos = draw_int(gen, 1, MAX_BATCH), draw_int(gen, 0, shape.n_ctx - 1)
            size = BYTES_PER_ELEMENT[draw_int(gen, 0, len(BYTES_PER_ELEMENT) - 1)]
            cases.append(decode_case(shape, batch, pos, size))
        return cases
