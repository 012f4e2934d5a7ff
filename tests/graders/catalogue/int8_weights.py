"""inference-engine/int8-weights: scale formula, rounding, clamping, dtype and layer slips."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

CATALOGUE = Catalogue(
    grader="int8_weights",
    task="inference-engine/int8-weights",
    reference=SOLUTIONS / "inference-engine" / "int8_correct.py",
    styles=(
        CorrectStyle(
            "float64 throughout, cast back",
            """
def weight_scales(w):
    largest = w.double().abs().max(dim=1).values
    return torch.where(largest > 0, largest / 127.0, torch.ones_like(largest)).float()

def quantize(w, scale):
    ratio = w.double() / scale.double().unsqueeze(-1)
    return ratio.round().clamp(-127, 127).to(torch.int8)

def int8_linear(x, q, scale, bias):
    w = q.double() * scale.double().view(-1, 1)
    return (x.double() @ w.T + bias.double()).float()
""",
        ),
        CorrectStyle(
            "reciprocals, torch.maximum of max and -min, masked_fill, .char()",
            """
def weight_scales(w):
    largest = torch.maximum(w.amax(dim=1), -w.amin(dim=1))
    return (largest * (1 / 127)).masked_fill(largest == 0, 1.0)

def quantize(w, scale):
    inverse = 1.0 / scale
    return (w * inverse[:, None]).round().clamp(min=-127, max=127).char()

def int8_linear(x, q, scale, bias):
    return torch.einsum("...i,oi->...o", x, q.float()) * scale + bias
""",
        ),
        CorrectStyle(
            "a loop over rows, clamping with torch.where",
            """
def weight_scales(w):
    out = torch.ones(w.shape[0])
    for r, row in enumerate(w):
        m = row.abs().max()
        if m != 0:
            out[r] = m / 127
    return out

def quantize(w, scale):
    rows = []
    for r in range(w.shape[0]):
        v = torch.round(w[r] / scale[r])
        v = torch.where(v > 127, 127.0, v)
        v = torch.where(v < -127, -127.0, v)
        rows.append(v.to(torch.int8))
    return torch.stack(rows)

def int8_linear(x, q, scale, bias):
    flat = x.reshape(-1, x.shape[-1])
    y = flat @ q.to(torch.float32).T
    y = y * scale.unsqueeze(0) + bias.unsqueeze(0)
    return y.reshape(*x.shape[:-1], q.shape[0])
""",
        ),
        CorrectStyle(
            "round to even by the 1.5 * 2**23 trick, F.linear on the dequantized weight",
            """
import torch.nn.functional as F

_MAGIC = 1.5 * 2**23

def quantize(w, scale):
    v = (w / scale[:, None]).clamp(-127, 127)
    return ((v + _MAGIC) - _MAGIC).to(torch.int8)

def int8_linear(x, q, scale, bias):
    return F.linear(x, q.float() * scale[:, None], bias)
""",
        ),
        CorrectStyle(
            "the product summed in float32 chunks of 64, reversed",
            """
def int8_linear(x, q, scale, bias):
    w = q.float() * scale[:, None]
    total = torch.zeros(*x.shape[:-1], q.shape[0])
    n = x.shape[-1]
    for start in reversed(range(0, n, 64)):
        total = total + x[..., start:start + 64] @ w[:, start:start + 64].T
    return total + bias
""",
        ),
        CorrectStyle(
            "the infinity norm, Python's round() per entry, a broadcast sum",
            """
def weight_scales(w):
    m = torch.linalg.vector_norm(w, ord=float("inf"), dim=1)
    s = m / 127
    s[m == 0] = 1.0
    return s

def quantize(w, scale):
    out = torch.empty(w.shape, dtype=torch.int8)
    for r in range(w.shape[0]):
        for c in range(w.shape[1]):
            out[r, c] = max(-127, min(127, round(float(w[r, c] / scale[r]))))
    return out

def int8_linear(x, q, scale, bias):
    w = q.float() * scale[:, None]
    return (x.unsqueeze(-2) * w).sum(-1) + bias
""",
        ),
        CorrectStyle(
            "clamped before rounding, addmm on a flattened x",
            """
def quantize(w, scale):
    return w.div(scale.unsqueeze(1)).clamp(-127, 127).round().to(torch.int8)

def int8_linear(x, q, scale, bias):
    flat = x.reshape(-1, x.shape[-1])
    y = torch.addmm(bias, flat, (q.float() * scale[:, None]).t())
    return y.view(*x.shape[:-1], -1)
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "one scale for the whole tensor",
            "weight_scales",
            "one scale for the whole tensor",
            """
def weight_scales(w):
    largest = w.abs().max()
    return torch.full((w.shape[0],), float(largest / 127))
""",
        ),
        CommonMistake(
            "scaled by 128",
            "weight_scales",
            "you divided by 128",
            """
def weight_scales(w):
    largest = w.abs().amax(dim=1)
    return torch.where(largest == 0, 1.0, largest / 128)
""",
        ),
        CommonMistake(
            "scaled by 255",
            "weight_scales",
            "you divided by 255",
            """
def weight_scales(w):
    largest = w.abs().amax(dim=1)
    return torch.where(largest == 0, 1.0, largest / 255)
""",
        ),
        CommonMistake(
            "the asymmetric (max - min) / 255",
            "weight_scales",
            "asymmetric scale",
            """
def weight_scales(w):
    spread = w.amax(dim=1) - w.amin(dim=1)
    return torch.where(spread == 0, 1.0, spread / 255)
""",
        ),
        CommonMistake(
            "largest entry, not largest magnitude",
            "weight_scales",
            "not the largest magnitude",
            """
def weight_scales(w):
    largest = w.amax(dim=1)
    return torch.where(largest == 0, 1.0, largest / 127)
""",
        ),
        CommonMistake(
            "an all-zero row's scale left at 0",
            "weight_scales",
            "an all-zero row got scale 0",
            """
def weight_scales(w):
    return w.abs().amax(dim=1) / 127
""",
        ),
        CommonMistake(
            "keepdim=True",
            "weight_scales",
            "keepdim=True",
            """
def weight_scales(w):
    largest = w.abs().amax(dim=1, keepdim=True)
    return torch.where(largest == 0, 1.0, largest / 127)
""",
        ),
        CommonMistake(
            "max over dim 0",
            "weight_scales",
            "the maximum over dim 0",
            """
def weight_scales(w):
    largest = w.abs().amax(dim=0)
    return torch.where(largest == 0, 1.0, largest / 127)
""",
        ),
        CommonMistake(
            "rounded half away from zero",
            "quantize",
            "half away from zero",
            """
def quantize(w, scale):
    v = w / scale[:, None]
    return (torch.sign(v) * torch.floor(v.abs() + 0.5)).clamp(-127, 127).to(torch.int8)
""",
        ),
        CommonMistake(
            "rounded half up, floor(v + 0.5)",
            "quantize",
            "ties were rounded up",
            """
def quantize(w, scale):
    return torch.floor(w / scale[:, None] + 0.5).clamp(-127, 127).to(torch.int8)
""",
        ),
        CommonMistake(
            "truncated by the cast",
            "quantize",
            "truncated toward zero",
            """
def quantize(w, scale):
    return (w / scale[:, None]).clamp(-127, 127).to(torch.int8)
""",
        ),
        CommonMistake(
            "clamped to -128..127",
            "quantize",
            "you clamped to -128..127",
            """
def quantize(w, scale):
    return torch.round(w / scale[:, None]).clamp(-128, 127).to(torch.int8)
""",
        ),
        CommonMistake(
            "not clamped",
            "quantize",
            "nothing was clamped",
            """
def quantize(w, scale):
    return torch.round(w / scale[:, None]).to(torch.int8)
""",
        ),
        CommonMistake(
            "scale recomputed from w",
            "quantize",
            "you recomputed each row's scale",
            """
def quantize(w, scale):
    own = weight_scales(w)
    return torch.round(w / own[:, None]).clamp(-127, 127).to(torch.int8)
""",
        ),
        CommonMistake(
            "multiplied by the scale",
            "quantize",
            "you multiplied by the scale",
            """
def quantize(w, scale):
    return torch.round(w * scale[:, None]).clamp(-127, 127).to(torch.int8)
""",
        ),
        CommonMistake(
            "scale broadcast along the columns",
            "quantize",
            "each column was divided",
            """
def quantize(w, scale):
    return torch.round(w / scale).clamp(-127, 127).to(torch.int8)
""",
        ),
        CommonMistake(
            "float32 q (torch.round's dtype)",
            "quantize",
            "the dtype is float32",
            """
def quantize(w, scale):
    return torch.round(w / scale[:, None]).clamp(-127, 127)
""",
        ),
        CommonMistake(
            "int64 q (.long())",
            "quantize",
            "the dtype is int64",
            """
def quantize(w, scale):
    return torch.round(w / scale[:, None]).clamp(-127, 127).long()
""",
        ),
        CommonMistake(
            "the bias forgotten",
            "int8_linear",
            "the bias is missing",
            """
def int8_linear(x, q, scale, bias):
    return x @ (q.float() * scale[:, None]).T
""",
        ),
        CommonMistake(
            "the bias scaled with the product",
            "int8_linear",
            "the bias was scaled too",
            """
def int8_linear(x, q, scale, bias):
    return (x @ q.float().T + bias) * scale
""",
        ),
        CommonMistake(
            "the scale on the input columns",
            "int8_linear",
            "applied per input column",
            """
def int8_linear(x, q, scale, bias):
    return (x * scale) @ q.float().T + bias
""",
        ),
        CommonMistake(
            "the weight untransposed",
            "int8_linear",
            "untransposed",
            """
def int8_linear(x, q, scale, bias):
    return x @ (q.float() * scale[:, None]) + bias
""",
        ),
    ),
)
