"""transformer-internals/stable-softmax: stabilising, normalising and dtype slips."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

CATALOGUE = Catalogue(
    grader="stable_softmax",
    task="transformer-internals/stable-softmax",
    reference=SOLUTIONS / "transformer-internals" / "softmax_correct.py",
    styles=(
        CorrectStyle(
            "log-sum-exp, then exp",
            """
def softmax(x):
    m = x.max(dim=-1, keepdim=True).values
    lse = m + (x - m).exp().sum(dim=-1, keepdim=True).log()
    return (x - lse).exp()
""",
        ),
        CorrectStyle(
            "log-softmax by hand, then exp",
            """
import torch

def softmax(x):
    shifted = x - torch.amax(x, dim=-1, keepdim=True)
    return torch.exp(shifted - torch.log(torch.sum(torch.exp(shifted), dim=-1, keepdim=True)))
""",
        ),
        CorrectStyle(
            "in float64, cast back",
            """
def softmax(x):
    wide = x.double()
    e = (wide - wide.max(dim=-1, keepdim=True).values).exp()
    return (e / e.sum(dim=-1, keepdim=True)).to(x.dtype)
""",
        ),
        CorrectStyle(
            "torch functions, multiply by the reciprocal",
            """
import torch

def softmax(x):
    e = torch.exp(x - torch.max(x, -1, keepdim=True)[0])
    return e * torch.reciprocal(torch.sum(e, -1, keepdim=True))
""",
        ),
        CorrectStyle(
            "online: running max and sum over the columns",
            """
import torch

def softmax(x):
    m = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype)
    s = torch.zeros(x.shape[:-1], dtype=x.dtype)
    for j in range(x.shape[-1]):
        xj = x[..., j]
        new = torch.maximum(m, xj)
        keep = torch.where(m == new, torch.ones_like(s), torch.exp(m - new))
        term = torch.where(xj == float("-inf"), torch.zeros_like(s), torch.exp(xj - new))
        s = s * keep + term
        m = new
    return torch.exp(x - m.unsqueeze(-1)) / s.unsqueeze(-1)
""",
        ),
        CorrectStyle(
            "masked entries handled separately",
            """
import torch

def softmax(x):
    finite = torch.isfinite(x)
    m = torch.where(finite, x, torch.full_like(x, -1e30)).max(dim=-1, keepdim=True).values
    e = torch.where(finite, (x - m).exp(), torch.zeros_like(x))
    return e / e.sum(dim=-1, keepdim=True)
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "the textbook formula, no max subtracted",
            "softmax",
            "nan or inf where every answer is finite",
            """
import torch

def softmax(x):
    e = torch.exp(x)
    return e / e.sum(dim=-1, keepdim=True)
""",
        ),
        CommonMistake(
            "one max for the whole tensor",
            "softmax",
            "not of the whole tensor",
            """
def softmax(x):
    e = (x - x.max()).exp()
    return e / e.sum(dim=-1, keepdim=True)
""",
        ),
        CommonMistake(
            "normalised over the whole tensor",
            "softmax",
            "sum to 1 over the whole tensor",
            """
def softmax(x):
    e = (x - x.max()).exp()
    return e / e.sum()
""",
        ),
        CommonMistake(
            "along the first dim",
            "softmax",
            "along the first dim",
            """
def softmax(x):
    e = (x - x.max(dim=0, keepdim=True).values).exp()
    return e / e.sum(dim=0, keepdim=True)
""",
        ),
        CommonMistake(
            "dim=1 written for 2-D inputs",
            "softmax",
            "dim=1",
            """
def softmax(x):
    e = (x - x.max(dim=1, keepdim=True).values).exp()
    return e / e.sum(dim=1, keepdim=True)
""",
        ),
        CommonMistake(
            "the row sums without keepdim",
            "softmax",
            "lost their dim",
            """
def softmax(x):
    e = (x - x.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1)
""",
        ),
        CommonMistake(
            "the row mean subtracted instead of the max",
            "softmax",
            "max of each row",
            """
def softmax(x):
    e = (x - x.mean(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)
""",
        ),
        CommonMistake(
            "float64 returned for float32 input",
            "softmax",
            "float64 for float32 input",
            """
def softmax(x):
    wide = x.double()
    e = (wide - wide.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)
""",
        ),
        CommonMistake(
            "logits clamped instead of shifted",
            "softmax",
            "clamp",
            """
def softmax(x):
    e = x.clamp(-80, 80).exp()
    return e / e.sum(dim=-1, keepdim=True)
""",
        ),
    ),
)
