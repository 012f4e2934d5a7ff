"""roofline/fused-gelu: formula, bias and dtype slips in the bias + tanh GELU chain.

The reference computes in the input's dtype (bfloat16 stays bfloat16 throughout); the
styles include upcasting to float32 and the sigmoid form of the same function.
"""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

CATALOGUE = Catalogue(
    grader="fused_pointwise",
    task="roofline/fused-gelu",
    reference=SOLUTIONS / "roofline" / "correct.py",
    styles=(
        CorrectStyle(
            "upcast to float32, tanh, cast back",
            """
def fused_gelu_bias(x, bias):
    h = x.float() + bias.float()
    inner = math.sqrt(2.0 / math.pi) * (h + 0.044715 * h.pow(3))
    return (0.5 * h * (1.0 + torch.tanh(inner))).to(x.dtype)
""",
        ),
        CorrectStyle(
            "sigmoid identity in float32",
            """
def fused_gelu_bias(x, bias):
    h = x.float() + bias.float()
    z = 2.0 * math.sqrt(2.0 / math.pi) * (h + 0.044715 * h.pow(3))
    return (h * torch.sigmoid(z)).to(x.dtype)
""",
        ),
        CorrectStyle(
            "sigmoid identity in the input dtype, factored cubic",
            """
def fused_gelu_bias(x, bias):
    h = x + bias
    return h * torch.sigmoid(1.5957691216057308 * h * (1.0 + 0.044715 * h * h))
""",
        ),
        CorrectStyle(
            "h * (0.5 + 0.5 tanh), unsqueezed bias",
            """
def fused_gelu_bias(x, bias):
    h = x + bias.reshape(*([1] * (x.dim() - 1)), -1)
    t = torch.tanh(0.7978845608028654 * (h + 0.044715 * h ** 3))
    return h * (0.5 + 0.5 * t)
""",
        ),
        CorrectStyle(
            "h / (1 + exp(-2z)) in the input dtype",
            """
def fused_gelu_bias(x, bias):
    h = x + bias
    z = SCALE * (h + 0.044715 * h * h * h)
    return h / (1.0 + torch.exp(-2.0 * z))
""",
        ),
        CorrectStyle(
            "0.5 h + 0.5 h tanh in the input dtype",
            """
def fused_gelu_bias(x, bias):
    h = torch.add(x, bias)
    half = 0.5 * h
    return half + half * torch.tanh(SCALE * h * (1.0 + 0.044715 * h.square()))
""",
        ),
        CorrectStyle(
            "compiled on a GPU, eager here",
            """
def _chain(x, bias):
    h = x + bias
    return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))


_compiled = torch.compile(_chain)


def fused_gelu_bias(x, bias):
    return _compiled(x, bias) if x.is_cuda else _chain(x, bias)
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "exact erf GELU instead of the tanh approximation",
            "fused_gelu_bias",
            "exact (erf) GELU",
            """
def fused_gelu_bias(x, bias):
    h = x + bias
    return 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
""",
        ),
        CommonMistake(
            "bias added after the GELU",
            "fused_gelu_bias",
            "bias after the activation",
            """
def fused_gelu_bias(x, bias):
    g = 0.5 * x * (1.0 + torch.tanh(SCALE * (x + 0.044715 * x * x * x)))
    return g + bias
""",
        ),
        CommonMistake(
            "missing the leading 0.5",
            "fused_gelu_bias",
            "leading 0.5",
            """
def fused_gelu_bias(x, bias):
    h = x + bias
    return h * (1.0 + torch.tanh(SCALE * (h + 0.044715 * h * h * h)))
""",
        ),
        CommonMistake(
            "sqrt(2 * pi) instead of sqrt(2 / pi)",
            "fused_gelu_bias",
            "sqrt(2 * pi)",
            """
def fused_gelu_bias(x, bias):
    h = x + bias
    return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 * math.pi) * (h + 0.044715 * h**3)))
""",
        ),
        CommonMistake(
            "cubic coefficient typed as 0.44715",
            "fused_gelu_bias",
            "cubic coefficient",
            """
def fused_gelu_bias(x, bias):
    h = x + bias
    return 0.5 * h * (1.0 + torch.tanh(SCALE * (h + 0.44715 * h**3)))
""",
        ),
        CommonMistake(
            "sigmoid(1.702 h) GELU",
            "fused_gelu_bias",
            "sigmoid(1.702",
            """
def fused_gelu_bias(x, bias):
    h = x + bias
    return h * torch.sigmoid(1.702 * h)
""",
        ),
        CommonMistake(
            "ReLU instead of GELU",
            "fused_gelu_bias",
            "ReLU",
            """
def fused_gelu_bias(x, bias):
    h = x + bias
    return torch.where(h > 0, h, 0)
""",
        ),
        CommonMistake(
            "bias broadcast as a column, along the first dimension",
            "fused_gelu_bias",
            "along the wrong dimension",
            """
def fused_gelu_bias(x, bias):
    h = x + bias[:, None]
    return 0.5 * h * (1.0 + torch.tanh(SCALE * (h + 0.044715 * h * h * h)))
""",
        ),
        CommonMistake(
            "upcast to float32 and never cast back",
            "fused_gelu_bias",
            "cast the result back",
            """
def fused_gelu_bias(x, bias):
    h = x.float() + bias.float()
    return 0.5 * h * (1.0 + torch.tanh(SCALE * (h + 0.044715 * h**3)))
""",
        ),
    ),
)
