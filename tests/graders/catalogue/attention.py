"""transformer-internals/attention-from-scratch: scale, softmax and causal-mask slips."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

_PLAIN = """
import math

import torch

def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v
"""


def _causal(body: str) -> str:
    """A causal_attention that differs from the reference in its masking ``body``, which
    turns ``scores`` (n x n per head) into ``weights``."""
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return f"""
import math

import torch

def causal_attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    n = q.shape[-2]
{lines}
    return weights @ v
"""


CATALOGUE = Catalogue(
    grader="attention",
    task="transformer-internals/attention-from-scratch",
    reference=SOLUTIONS / "transformer-internals" / "attention_correct.py",
    styles=(
        CorrectStyle(
            "einsum, queries scaled first",
            """
import torch

def attention(q, k, v):
    scores = torch.einsum("bhqd,bhkd->bhqk", q * q.shape[-1] ** -0.5, k)
    return torch.einsum("bhqk,bhkd->bhqd", scores.softmax(dim=-1), v)

def causal_attention(q, k, v):
    scores = torch.einsum("bhqd,bhkd->bhqk", q * q.shape[-1] ** -0.5, k)
    n = q.shape[-2]
    scores = scores.masked_fill(torch.triu(torch.ones(n, n), diagonal=1).bool(), float("-inf"))
    return torch.einsum("bhqk,bhkd->bhqd", scores.softmax(dim=-1), v)
""",
        ),
        CorrectStyle(
            "own stable softmax, -1e9 for masked scores",
            """
import math

import torch

def _softmax(x):
    e = (x - x.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)

def attention(q, k, v):
    return _softmax(torch.matmul(q, k.transpose(2, 3)) / math.sqrt(k.size(-1))) @ v

def causal_attention(q, k, v):
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(k.size(-1))
    n = scores.size(-1)
    keep = torch.tril(torch.ones(n, n, dtype=torch.bool))
    return _softmax(scores.masked_fill(~keep, -1e9)) @ v
""",
        ),
        CorrectStyle(
            "additive mask, scale as a product",
            """
import torch

def attention(q, k, v):
    scale = 1.0 / q.shape[-1] ** 0.5
    return torch.softmax((q @ k.mT) * scale, dim=-1) @ v

def causal_attention(q, k, v):
    n = q.shape[-2]
    mask = torch.full((n, n), float("-inf"), dtype=q.dtype).triu(1)
    scale = 1.0 / q.shape[-1] ** 0.5
    return torch.softmax((q @ k.mT) * scale + mask, dim=-1) @ v
""",
        ),
        CorrectStyle(
            "in float64, cast back",
            """
import math

import torch

def attention(q, k, v):
    a, b, c = q.double(), k.double(), v.double()
    w = torch.softmax(a @ b.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return (w @ c).to(q.dtype)

def causal_attention(q, k, v):
    a, b, c = q.double(), k.double(), v.double()
    scores = a @ b.transpose(-2, -1) / math.sqrt(q.shape[-1])
    i = torch.arange(q.shape[-2])
    scores = torch.where(i[:, None] >= i[None, :], scores, float("-inf"))
    return (torch.softmax(scores, dim=-1) @ c).to(q.dtype)
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "no 1/sqrt(head_dim) scale",
            "attention",
            "without the 1/sqrt(head_dim) scale",
            """
import torch

def attention(q, k, v):
    return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v
""",
        ),
        CommonMistake(
            "scaled by head_dim, not its square root",
            "attention",
            "divided the scores by head_dim",
            """
import torch

def attention(q, k, v):
    return torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1], dim=-1) @ v
""",
        ),
        CommonMistake(
            "scaled by the values' width",
            "attention",
            "width of the values",
            """
import math

import torch

def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])
    return torch.softmax(scores, dim=-1) @ v
""",
        ),
        CommonMistake(
            "softmax over the queries",
            "attention",
            "softmax ran over the queries",
            """
import math

import torch

def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-2) @ v
""",
        ),
        CommonMistake(
            "a causal mask in plain attention",
            "attention",
            "plain attention lets every query see every key",
            """
import math

import torch

def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    n = q.shape[-2]
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v
""",
        ),
        CommonMistake(
            "no scale in causal attention",
            "causal_attention",
            "without the 1/sqrt(head_dim) scale",
            """
import torch

def causal_attention(q, k, v):
    scores = q @ k.transpose(-2, -1)
    n = q.shape[-2]
    scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
""",
        ),
        CommonMistake(
            "causal scaled by the values' width",
            "causal_attention",
            "width of the values",
            """
import math

import torch

def causal_attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])
    n = q.shape[-2]
    scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
""",
        ),
        CommonMistake(
            "no causal mask",
            "causal_attention",
            "no causal mask",
            _causal("weights = torch.softmax(scores, dim=-1)"),
        ),
        CommonMistake(
            "mask off by one: query i also sees key i + 1",
            "causal_attention",
            "off by one",
            _causal(
                """
future = torch.ones(n, n, dtype=torch.bool).triu(2)
weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
"""
            ),
        ),
        CommonMistake(
            "mask off by one: query i does not see itself",
            "causal_attention",
            "must always see key i itself",
            _causal(
                """
future = torch.ones(n, n, dtype=torch.bool).triu(0)
weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
"""
            ),
        ),
        CommonMistake(
            "mask the wrong way round",
            "causal_attention",
            "wrong way round",
            _causal(
                """
past = torch.ones(n, n, dtype=torch.bool).tril(-1)
weights = torch.softmax(scores.masked_fill(past, float("-inf")), dim=-1)
"""
            ),
        ),
        CommonMistake(
            "mask applied after the softmax",
            "causal_attention",
            "after the softmax",
            _causal("weights = torch.softmax(scores, dim=-1) * torch.ones(n, n).tril()"),
        ),
        CommonMistake(
            "masked scores set to 0, not -inf",
            "causal_attention",
            "set to 0",
            _causal(
                """
future = torch.ones(n, n, dtype=torch.bool).triu(1)
weights = torch.softmax(scores.masked_fill(future, 0.0), dim=-1)
"""
            ),
        ),
        CommonMistake(
            "causal softmax over the queries",
            "causal_attention",
            "softmax ran over the queries",
            _causal(
                """
future = torch.ones(n, n, dtype=torch.bool).triu(1)
weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-2)
"""
            ),
        ),
    ),
)
