"""forward-pass/gpt2-block: LayerNorm, attention, GELU and residual-wiring slips."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

# the parts of the reference's attention around the head split, for mistakes that change one
_ATTENTION_HEAD = """
def causal_self_attention(x, w_qkv, b_qkv, w_proj, b_proj, n_head):
    batch, seq, width = x.shape
    heads = int(n_head)
    head_dim = width // heads
    q, k, v = (x @ w_qkv.T + b_qkv).split(width, dim=-1)
"""
_CAUSAL_SOFTMAX = """
    future = torch.ones(seq, seq, dtype=torch.bool).triu(diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
"""
_SPLIT = """
    q, k, v = (t.view(batch, seq, heads, head_dim).transpose(1, 2) for t in (q, k, v))
"""
_MERGE = """
    y = (weights @ v).transpose(1, 2).reshape(batch, seq, width)
    return y @ w_proj.T + b_proj
"""


def _scaled_by(divisor: str) -> str:
    scores = f"    scores = q @ k.transpose(-2, -1) / {divisor}\n"
    return _ATTENTION_HEAD + _SPLIT + scores + _CAUSAL_SOFTMAX + _MERGE


_BLOCK_SIGNATURE = """
def gpt2_block(x, ln_1_weight, ln_1_bias, w_qkv, b_qkv, w_attn_proj, b_attn_proj,
               ln_2_weight, ln_2_bias, w_fc, b_fc, w_mlp_proj, b_mlp_proj, n_head):
"""

CATALOGUE = Catalogue(
    grader="gpt2_block",
    task="forward-pass/gpt2-block",
    reference=SOLUTIONS / "forward-pass" / "correct.py",
    styles=(
        CorrectStyle(
            "torch.var(unbiased=False) and rsqrt",
            """
def layer_norm(x, weight, bias):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return weight * (x - mean) * torch.rsqrt(var + 1e-5) + bias
""",
        ),
        CorrectStyle(
            "variance as E[x^2] - E[x]^2",
            """
def layer_norm(x, weight, bias):
    mean = x.mean(-1, keepdim=True)
    var = (x * x).mean(-1, keepdim=True) - mean * mean
    return (x - mean) / (var + 1e-5).sqrt() * weight + bias
""",
        ),
        CorrectStyle(
            "everything in float64, cast back at the end",
            """
_correct_layer_norm, _correct_attention, _correct_mlp = layer_norm, causal_self_attention, mlp

def layer_norm(x, weight, bias):
    return _correct_layer_norm(x.double(), weight.double(), bias.double()).float()

def causal_self_attention(x, w_qkv, b_qkv, w_proj, b_proj, n_head):
    wide = (t.double() for t in (x, w_qkv, b_qkv, w_proj, b_proj))
    return _correct_attention(*wide, n_head).float()

def mlp(x, w_fc, b_fc, w_proj, b_proj):
    return _correct_mlp(*(t.double() for t in (x, w_fc, b_fc, w_proj, b_proj))).float()
""",
        ),
        CorrectStyle(
            "einsum, an additive mask and a hand-written softmax",
            """
def causal_self_attention(x, w_qkv, b_qkv, w_proj, b_proj, n_head):
    B, T, C = x.shape
    H = int(n_head)
    D = C // H
    qkv = torch.einsum("btc,oc->bto", x, w_qkv) + b_qkv
    q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(B, T, H, D) for i in range(3))
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * D**-0.5
    scores = scores + torch.full((T, T), -1e9).triu(1)
    scores = scores - scores.max(-1, keepdim=True).values
    p = scores.exp()
    p = p / p.sum(-1, keepdim=True)
    y = torch.einsum("bhqk,bkhd->bqhd", p, v).reshape(B, T, C)
    return torch.einsum("btc,oc->bto", y, w_proj) + b_proj
""",
        ),
        CorrectStyle(
            "tanh GELU written as a sigmoid, F.linear layers",
            """
import torch.nn.functional as F

def mlp(x, w_fc, b_fc, w_proj, b_proj):
    h = F.linear(x, w_fc, b_fc)
    h = h * torch.sigmoid(2 * math.sqrt(2 / math.pi) * (h + 0.044715 * h.pow(3)))
    return F.linear(h, w_proj, b_proj)
""",
        ),
        CorrectStyle(
            "a block written out in one function",
            _BLOCK_SIGNATURE
            + """
    def norm(t, w, b):
        mu = t.mean(-1, keepdim=True)
        return (t - mu) / torch.sqrt(t.var(-1, correction=0, keepdim=True) + 1e-5) * w + b

    B, T, C = x.shape
    H = int(n_head)
    q, k, v = (norm(x, ln_1_weight, ln_1_bias) @ w_qkv.T + b_qkv).chunk(3, dim=-1)
    q, k, v = (t.reshape(B, T, H, C // H).permute(0, 2, 1, 3) for t in (q, k, v))
    att = (q @ k.mT) / math.sqrt(C // H)
    att = att.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf")).softmax(-1)
    y = (att @ v).permute(0, 2, 1, 3).reshape(B, T, C)
    x = x + y @ w_attn_proj.T + b_attn_proj
    h = norm(x, ln_2_weight, ln_2_bias) @ w_fc.T + b_fc
    c = math.sqrt(2.0 / math.pi)
    h = 0.5 * h * (1.0 + torch.tanh(c * (h + 0.044715 * torch.pow(h, 3.0))))
    return x + h @ w_mlp_proj.T + b_mlp_proj
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "epsilon outside the square root",
            "layer_norm",
            "epsilon outside the square root",
            """
def layer_norm(x, weight, bias):
    mean = x.mean(dim=-1, keepdim=True)
    std = x.std(dim=-1, keepdim=True, unbiased=False)
    return (x - mean) / (std + 1e-5) * weight + bias
""",
        ),
        CommonMistake(
            "no epsilon",
            "layer_norm",
            "without the epsilon",
            """
def layer_norm(x, weight, bias):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var) * weight + bias
""",
        ),
        CommonMistake(
            "unbiased variance (torch.var's default)",
            "layer_norm",
            "unbiased variance",
            """
def layer_norm(x, weight, bias):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * weight + bias
""",
        ),
        CommonMistake(
            "no causal mask",
            "causal_self_attention",
            "no causal mask",
            _ATTENTION_HEAD
            + _SPLIT
            + """
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(head_dim), dim=-1)
"""
            + _MERGE,
        ),
        CommonMistake(
            "scores divided by head_dim, not its square root",
            "causal_self_attention",
            "divided the scores by head_dim",
            _scaled_by("head_dim"),
        ),
        CommonMistake(
            "scores divided by sqrt(n_embd), not sqrt(head_dim)",
            "causal_self_attention",
            "sqrt(n_embd)",
            _scaled_by("math.sqrt(width)"),
        ),
        CommonMistake(
            "heads split by reshaping to (B, n_head, T, D) without a transpose",
            "causal_self_attention",
            "without moving the head axis",
            _ATTENTION_HEAD
            + """
    q, k, v = (t.reshape(batch, heads, seq, head_dim) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
"""
            + _CAUSAL_SOFTMAX
            + """
    y = (weights @ v).reshape(batch, seq, width)
    return y @ w_proj.T + b_proj
""",
        ),
        CommonMistake(
            "heads merged back without transposing",
            "causal_self_attention",
            "merged the heads back",
            _ATTENTION_HEAD
            + _SPLIT
            + """
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
"""
            + _CAUSAL_SOFTMAX
            + """
    y = (weights @ v).reshape(batch, seq, width)
    return y @ w_proj.T + b_proj
""",
        ),
        CommonMistake(
            "the erf GELU (nn.GELU's default)",
            "mlp",
            "erf GELU",
            """
def mlp(x, w_fc, b_fc, w_proj, b_proj):
    h = x @ w_fc.T + b_fc
    h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
    return h @ w_proj.T + b_proj
""",
        ),
        CommonMistake(
            "the sigmoid approximation x * sigmoid(1.702 x)",
            "mlp",
            "sigmoid(1.702",
            """
def mlp(x, w_fc, b_fc, w_proj, b_proj):
    h = x @ w_fc.T + b_fc
    return (h * torch.sigmoid(1.702 * h)) @ w_proj.T + b_proj
""",
        ),
        CommonMistake(
            "post-norm, as in the 2017 Transformer",
            "gpt2_block",
            "post-norm",
            _BLOCK_SIGNATURE
            + """
    x = layer_norm(
        x + causal_self_attention(x, w_qkv, b_qkv, w_attn_proj, b_attn_proj, n_head),
        ln_1_weight,
        ln_1_bias,
    )
    return layer_norm(x + mlp(x, w_fc, b_fc, w_mlp_proj, b_mlp_proj), ln_2_weight, ln_2_bias)
""",
        ),
        CommonMistake(
            "both branches read the block's input (parallel attention and MLP)",
            "gpt2_block",
            "in parallel",
            _BLOCK_SIGNATURE
            + """
    attn = causal_self_attention(
        layer_norm(x, ln_1_weight, ln_1_bias), w_qkv, b_qkv, w_attn_proj, b_attn_proj, n_head
    )
    return x + attn + mlp(layer_norm(x, ln_2_weight, ln_2_bias), w_fc, b_fc, w_mlp_proj, b_mlp_proj)
""",
        ),
        CommonMistake(
            "the residual carries the normalised x",
            "gpt2_block",
            "residual stream carries the normalised",
            _BLOCK_SIGNATURE
            + """
    x = layer_norm(x, ln_1_weight, ln_1_bias)
    x = x + causal_self_attention(x, w_qkv, b_qkv, w_attn_proj, b_attn_proj, n_head)
    x = layer_norm(x, ln_2_weight, ln_2_bias)
    return x + mlp(x, w_fc, b_fc, w_mlp_proj, b_mlp_proj)
""",
        ),
    ),
)
