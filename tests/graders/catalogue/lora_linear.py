"""training-path/lora-linear: scaling, factor-order and bias slips."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

CATALOGUE = Catalogue(
    grader="lora_linear",
    task="training-path/lora-linear",
    reference=SOLUTIONS / "training-path" / "lora_correct.py",
    styles=(
        CorrectStyle(
            "through the merged weight",
            """
def lora_linear(x, w, b, a, b_lora, alpha):
    return x @ merge_lora(w, a, b_lora, alpha).T + b
""",
        ),
        CorrectStyle(
            "einsum, float(alpha), the scale on the down-projection",
            """
import torch

def lora_linear(x, w, b, a, b_lora, alpha):
    scale = float(alpha) / a.shape[0]
    down = scale * torch.einsum("...i,ri->...r", x, a)
    return torch.einsum("...i,oi->...o", x, w) + b + torch.einsum("...r,or->...o", down, b_lora)

def merge_lora(w, a, b_lora, alpha):
    return w + torch.einsum("or,ri->oi", b_lora * (float(alpha) / a.shape[0]), a)
""",
        ),
        CorrectStyle(
            "the factors multiplied first",
            """
import torch

def lora_linear(x, w, b, a, b_lora, alpha):
    delta = (alpha / a.size(0)) * torch.matmul(b_lora, a)
    return torch.matmul(x, w.T) + torch.matmul(x, delta.T) + b
""",
        ),
        CorrectStyle(
            "float64 throughout, cast back",
            """
_correct_linear, _correct_merge = lora_linear, merge_lora

def lora_linear(x, w, b, a, b_lora, alpha):
    wide = (t.double() for t in (x, w, b, a, b_lora, alpha))
    return _correct_linear(*wide).to(x.dtype)

def merge_lora(w, a, b_lora, alpha):
    return _correct_merge(*(t.double() for t in (w, a, b_lora, alpha))).to(w.dtype)
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "scaled by alpha, not alpha / r",
            "lora_linear",
            "not by alpha alone",
            """
def lora_linear(x, w, b, a, b_lora, alpha):
    return x @ w.T + b + alpha * ((x @ a.T) @ b_lora.T)

def merge_lora(w, a, b_lora, alpha):
    return w + alpha * (b_lora @ a)
""",
        ),
        CommonMistake(
            "no scaling",
            "lora_linear",
            "without the alpha / r scaling",
            """
def lora_linear(x, w, b, a, b_lora, alpha):
    return x @ w.T + b + (x @ a.T) @ b_lora.T
""",
        ),
        CommonMistake(
            "rank read from a.shape[1]",
            "lora_linear",
            "a.shape[0]",
            """
def lora_linear(x, w, b, a, b_lora, alpha):
    return x @ w.T + b + alpha / a.shape[1] * ((x @ a.T) @ b_lora.T)
""",
        ),
        CommonMistake(
            "base bias forgotten",
            "lora_linear",
            "bias b",
            """
def lora_linear(x, w, b, a, b_lora, alpha):
    scale = alpha / a.shape[0]
    return x @ w.T + scale * ((x @ a.T) @ b_lora.T)
""",
        ),
        CommonMistake(
            "b_lora applied first, as the down-projection",
            "lora_linear",
            "b_lora first",
            """
def lora_linear(x, w, b, a, b_lora, alpha):
    scale = alpha / a.shape[0]
    return x @ w.T + b + scale * ((x @ b_lora) @ a)

def merge_lora(w, a, b_lora, alpha):
    return w + (alpha / a.shape[0]) * (a.T @ b_lora.T)
""",
        ),
        CommonMistake(
            "merged update transposed",
            "merge_lora",
            "transposed",
            """
def merge_lora(w, a, b_lora, alpha):
    return w + (alpha / a.shape[0]) * (a.T @ b_lora.T)
""",
        ),
        CommonMistake(
            "merged without the scaling",
            "merge_lora",
            "without the alpha / r scaling",
            """
def merge_lora(w, a, b_lora, alpha):
    return w + b_lora @ a
""",
        ),
    ),
)
