"""flops-accounting/count-flops: the usual slips in counting a GPT-2 forward pass's matmul
FLOPs and a decode step's bytes, and other correct ways of counting both."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle


def _forward(
    per_layer: str, lm_head: str = "2 * t * c * vocab_size", layers: str = "n_layer"
) -> str:
    """A forward_flops counting ``per_layer`` FLOPs in each layer and ``lm_head`` after them."""
    return f"""
def forward_flops(config, batch, seq):
    n_layer, n_head, n_embd, vocab_size, n_ctx = config.tolist()
    b, s, c = int(batch), int(seq), n_embd
    t = b * s
    per_layer = {per_layer}
    return torch.tensor({layers} * per_layer + {lm_head})
"""


#: the rule's six products per layer, spelled out
_QKV, _SCORES, _MIX = "2 * t * c * 3 * c", "2 * b * s * s * c", "2 * b * s * s * c"
_OUT, _UP, _DOWN = "2 * t * c * c", "2 * t * c * 4 * c", "2 * t * 4 * c * c"


def _layer(**change: str) -> str:
    terms = {"qkv": _QKV, "scores": _SCORES, "mix": _MIX, "out": _OUT, "up": _UP, "down": _DOWN}
    terms.update(change)
    return " + ".join(f"({term})" for term in terms.values() if term)


def _decode(weights: str, cache: str = "2 * n_layer * b * p * c", size: str = "size") -> str:
    """A decode_step_bytes reading ``weights`` and ``cache`` elements, ``size`` bytes each."""
    return f"""
def decode_step_bytes(config, batch, pos, bytes_per_element):
    n_layer, n_head, n_embd, vocab_size, n_ctx = config.tolist()
    b, p, size, c = int(batch), int(pos), int(bytes_per_element), n_embd
    return torch.tensor(({weights}) + ({cache})) * {size}
"""


#: every parameter: wte (the tied LM head), wpe, n_layer blocks of 12c² + 13c, ln_f
_ALL = "vocab_size * c + n_ctx * c + n_layer * (12 * c * c + 13 * c) + 2 * c"

CATALOGUE = Catalogue(
    grader="count_flops",
    task="flops-accounting/count-flops",
    reference=SOLUTIONS / "flops-accounting" / "correct.py",
    styles=(
        CorrectStyle(
            "int64 tensor arithmetic on the config's entries, never leaving torch",
            """
def forward_flops(config, batch, seq):
    n_layer, n_head, n_embd, vocab_size, n_ctx = config.unbind()
    tokens = batch * seq
    projections = 2 * tokens * n_embd * n_embd * (3 + 1 + 4 + 4)
    attention = 2 * 2 * batch * seq * seq * n_embd
    return n_layer * (projections + attention) + 2 * tokens * n_embd * vocab_size


def decode_step_bytes(config, batch, pos, bytes_per_element):
    n_layer, n_head, n_embd, vocab_size, n_ctx = config.unbind()
    weights = (vocab_size + n_ctx) * n_embd + n_layer * (12 * n_embd**2 + 13 * n_embd)
    weights = weights + 2 * n_embd
    return (weights + 2 * n_layer * batch * pos * n_embd) * bytes_per_element
""",
        ),
        CorrectStyle(
            "per token, as the quiz counts it, with both attention products in full",
            """
def forward_flops(config, batch, seq):
    n_layer, n_head, d_model, vocab, n_ctx = (int(v) for v in config)
    n = 12 * n_layer * d_model**2  # Kaplan's non-embedding parameters
    per_token = 2 * n + 2 * 2 * n_layer * int(seq) * d_model + 2 * d_model * vocab
    return torch.tensor(per_token * int(batch) * int(seq), dtype=torch.int64)
""",
        ),
        CorrectStyle(
            "float64 arithmetic, rounded at the end (exact below 2**53)",
            """
def forward_flops(config, batch, seq):
    n_layer, n_head, c, vocab, n_ctx = config.double().tolist()
    b, s = float(batch), float(seq)
    head = c / n_head
    attention = n_head * 2 * (2.0 * s * head * s) * b
    total = n_layer * (24.0 * b * s * c * c + attention) + 2.0 * b * s * c * vocab
    return torch.tensor(total, dtype=torch.float64).round().to(torch.int64)


def decode_step_bytes(config, batch, pos, bytes_per_element):
    n_layer, n_head, c, vocab, n_ctx = config.double().tolist()
    weights = vocab * c + n_ctx * c + n_layer * (12.0 * c * c + 13.0 * c) + 2.0 * c
    cache = 2.0 * n_layer * float(batch) * float(pos) * c
    return torch.tensor(round((weights + cache) * float(bytes_per_element)))
""",
        ),
        CorrectStyle(
            "every matmul listed by shape, head by head, layer by layer",
            """
def forward_flops(config, batch, seq):
    n_layer, n_head, c, vocab, n_ctx = config.tolist()
    b, s = int(batch), int(seq)
    d = c // n_head
    shapes = []  # (m, k, n) of each (m x k) @ (k x n)
    for _ in range(n_layer):
        shapes += [(b * s, c, 3 * c)]
        for _ in range(b * n_head):
            shapes += [(s, d, s), (s, s, d)]
        shapes += [(b * s, c, c), (b * s, c, 4 * c), (b * s, 4 * c, c)]
    shapes += [(b * s, c, vocab)]
    return torch.tensor(sum(2 * m * k * n for m, k, n in shapes))
""",
        ),
        CorrectStyle(
            "parameters counted on a GPT-2 built on the meta device, the KV cache as a shape",
            """
import torch.nn as nn


def decode_step_bytes(config, batch, pos, bytes_per_element):
    n_layer, n_head, c, vocab, n_ctx = config.tolist()
    with torch.device("meta"):
        blocks = [
            nn.ModuleList([nn.LayerNorm(c), nn.Linear(c, 3 * c), nn.Linear(c, c),
                           nn.LayerNorm(c), nn.Linear(c, 4 * c), nn.Linear(4 * c, c)])
            for _ in range(n_layer)
        ]
        wte = nn.Embedding(vocab, c)
        lm_head = nn.Linear(c, vocab, bias=False)
        lm_head.weight = wte.weight  # tied: one tensor
        model = nn.ModuleList([wte, nn.Embedding(n_ctx, c), *blocks, nn.LayerNorm(c), lm_head])
        cache = torch.empty(n_layer, 2, int(batch), n_head, int(pos), c // n_head)
    elements = sum(p.numel() for p in model.parameters()) + cache.numel()
    return torch.tensor(elements * int(bytes_per_element))
""",
        ),
        CorrectStyle(
            "the checkpoint's tensors by name and shape",
            """
import math


def decode_step_bytes(config, batch, pos, bytes_per_element):
    n_layer, n_head, c, vocab, n_ctx = config.tolist()
    shapes = {"wte.weight": (vocab, c), "wpe.weight": (n_ctx, c)}
    for i in range(n_layer):
        shapes.update({
            f"h.{i}.ln_1.weight": (c,), f"h.{i}.ln_1.bias": (c,),
            f"h.{i}.attn.c_attn.weight": (c, 3 * c), f"h.{i}.attn.c_attn.bias": (3 * c,),
            f"h.{i}.attn.c_proj.weight": (c, c), f"h.{i}.attn.c_proj.bias": (c,),
            f"h.{i}.ln_2.weight": (c,), f"h.{i}.ln_2.bias": (c,),
            f"h.{i}.mlp.c_fc.weight": (c, 4 * c), f"h.{i}.mlp.c_fc.bias": (4 * c,),
            f"h.{i}.mlp.c_proj.weight": (4 * c, c), f"h.{i}.mlp.c_proj.bias": (c,),
        })
    shapes.update({"ln_f.weight": (c,), "ln_f.bias": (c,)})  # lm_head.weight is wte.weight
    weights = sum(math.prod(shape) for shape in shapes.values())
    kv = n_layer * 2 * int(batch) * int(pos) * n_head * (c // n_head)
    return torch.tensor((weights + kv) * int(bytes_per_element), dtype=torch.int64)
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "m·k·n per product, without the 2",
            "forward_flops",
            "a product costs 2·m·k·n FLOPs",
            _forward(
                "t * c * 3 * c + b * s * s * c + b * s * s * c + t * c * c + t * c * 4 * c"
                " + t * 4 * c * c",
                lm_head="t * c * vocab_size",
            ),
        ),
        CommonMistake(
            "attention products left out (no weights in them)",
            "forward_flops",
            "you left out the attention products",
            _forward(_layer(scores="", mix="")),
        ),
        CommonMistake(
            "only Q·Kᵀ counted, attention·V forgotten",
            "forward_flops",
            "your attention term is half the rule's",
            _forward(_layer(mix="")),
        ),
        CommonMistake(
            "attention halved for the causal mask",
            "forward_flops",
            "your attention term is half the rule's",
            _forward(_layer(scores="b * s * s * c", mix="b * s * s * c")),
        ),
        CommonMistake(
            "attention counted causally, query i against keys 0..i",
            "forward_flops",
            "you counted the attention products causally",
            _forward(
                _layer(scores="2 * b * c * s * (s + 1) // 2", mix="2 * b * c * s * (s + 1) // 2")
            ),
        ),
        CommonMistake(
            "Kaplan's per-token attention term with n_ctx",
            "forward_flops",
            "Kaplan's per-token attention term",
            _forward(_layer(scores="2 * n_ctx * c * t", mix="")),
        ),
        CommonMistake(
            "attention over n_ctx keys instead of seq",
            "forward_flops",
            "your attention products run over n_ctx keys",
            _forward(_layer(scores="2 * b * s * n_ctx * c", mix="2 * b * s * n_ctx * c")),
        ),
        CommonMistake(
            "attention for one head of head_dim only",
            "forward_flops",
            "for one head of head_dim",
            _forward(
                _layer(scores="2 * b * s * s * (c // n_head)", mix="2 * b * s * s * (c // n_head)")
            ),
        ),
        CommonMistake(
            "LM head forgotten",
            "forward_flops",
            "you left out the LM head",
            _forward(_layer(), lm_head="0"),
        ),
        CommonMistake(
            "LM head at the last position only",
            "forward_flops",
            "the LM head at the last position only",
            _forward(_layer(), lm_head="2 * b * c * vocab_size"),
        ),
        CommonMistake(
            "one layer counted, not n_layer",
            "forward_flops",
            "every one of the n_layer layers",
            _forward(_layer(), layers="1"),
        ),
        CommonMistake(
            "MLP as wide as n_embd, the 4x forgotten",
            "forward_flops",
            "GPT-2's is 4·n_embd",
            _forward(_layer(up="2 * t * c * c", down="2 * t * c * c")),
        ),
        CommonMistake(
            "QKV as a single n_embd x n_embd product",
            "forward_flops",
            "it makes Q, K and V at once",
            _forward(_layer(qkv="2 * t * c * c")),
        ),
        CommonMistake(
            "one sequence counted, batch ignored",
            "forward_flops",
            "every term scales with batch",
            _forward(_layer(), lm_head="2 * s * c * vocab_size")
            .replace("b, s, c = int(batch)", "b, s, c = 1")
            .replace("t = b * s", "t = s"),
        ),
        CommonMistake(
            "no KV cache: weights only",
            "decode_step_bytes",
            "you left out the KV cache",
            _decode(_ALL, cache="0"),
        ),
        CommonMistake(
            "KV cache of pos + 1 positions (the new token's too)",
            "decode_step_bytes",
            "your KV cache holds pos + 1 positions",
            _decode(_ALL, cache="2 * n_layer * b * (p + 1) * c"),
        ),
        CommonMistake(
            "KV cache for the whole context",
            "decode_step_bytes",
            "for the whole n_ctx context",
            _decode(_ALL, cache="2 * n_layer * b * n_ctx * c"),
        ),
        CommonMistake(
            "KV cache without the 2 for K and V",
            "decode_step_bytes",
            "missing its factor 2",
            _decode(_ALL, cache="n_layer * b * p * c"),
        ),
        CommonMistake(
            "KV cache of one layer",
            "decode_step_bytes",
            "your KV cache is one layer's",
            _decode(_ALL, cache="2 * b * p * c"),
        ),
        CommonMistake(
            "KV cache of one sequence",
            "decode_step_bytes",
            "your KV cache is one sequence's",
            _decode(_ALL, cache="2 * n_layer * p * c"),
        ),
        CommonMistake(
            "KV cache of one head",
            "decode_step_bytes",
            "your KV cache is one head's",
            _decode(_ALL, cache="2 * n_layer * b * p * (c // n_head)"),
        ),
        CommonMistake(
            "weights read once per sequence",
            "decode_step_bytes",
            "the whole batch shares one read",
            _decode(f"b * ({_ALL})"),
        ),
        CommonMistake(
            "LM head counted as a matrix of its own",
            "decode_step_bytes",
            "GPT-2 ties it to the token embedding",
            _decode(f"{_ALL} + c * vocab_size"),
        ),
        CommonMistake(
            "position embedding left out",
            "decode_step_bytes",
            "you left out the position embedding",
            _decode("vocab_size * c + n_layer * (12 * c * c + 13 * c) + 2 * c"),
        ),
        CommonMistake(
            "weight matrices only, no biases or LayerNorms",
            "decode_step_bytes",
            "you counted the weight matrices only",
            _decode("vocab_size * c + n_ctx * c + n_layer * 12 * c * c"),
        ),
        CommonMistake(
            "Kaplan's N as the weights",
            "decode_step_bytes",
            "Kaplan's non-embedding N",
            _decode("12 * n_layer * c * c"),
        ),
        CommonMistake(
            "elements, not bytes",
            "decode_step_bytes",
            "this is the number of elements",
            _decode(_ALL, size="1"),
        ),
    ),
)
