"""inference-engine/kv-cache-decode: which slots are read, the scale, the split, the bias."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

_HEAD = """
import math

import torch

def decode_step(x, k_cache, v_cache, pos, w_qkv, b_qkv, w_proj, b_proj, n_head):
    B, C = x.shape
    H, p = int(n_head), int(pos)
    D = C // H
"""


def _step(body: str) -> str:
    """A decode_step whose ``body`` follows the reference's first lines (``B, C, H, p, D``)."""
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return f"{_HEAD}{lines}\n"


def _attend(keys: str, values: str, *, split: str = "q, k, v = qkv.split(C, dim=-1)") -> str:
    """The reference with the cached ``keys`` and ``values`` (expressions in k_cache, v_cache,
    k, v, p) and the ``split`` of qkv swapped in; the rest as the prompt says."""
    return _step(
        f"""
qkv = x @ w_qkv + b_qkv
{split}
keys = {keys}
values = {values}
scores = q.reshape(B, H, 1, D) @ keys.transpose(-2, -1) / math.sqrt(D)
y = (torch.softmax(scores, dim=-1) @ values).reshape(B, C) @ w_proj + b_proj
return torch.stack([y, k, v], dim=1)
"""
    )


_NEW_K = "k.reshape(B, H, 1, D)"
_NEW_V = "v.reshape(B, H, 1, D)"
_CACHED_K = f"torch.cat([k_cache[:, :, :p], {_NEW_K}], dim=2)"
_CACHED_V = f"torch.cat([v_cache[:, :, :p], {_NEW_V}], dim=2)"


def _finish(body: str) -> str:
    """The reference's attention with ``body`` replacing how y is projected and what is
    returned (``attended`` is (B, C), ``k`` and ``v`` the new key and value)."""
    return _step(
        f"""
q, k, v = (x @ w_qkv + b_qkv).split(C, dim=-1)
keys = {_CACHED_K}
values = {_CACHED_V}
scores = q.reshape(B, H, 1, D) @ keys.transpose(-2, -1) / math.sqrt(D)
attended = (torch.softmax(scores, dim=-1) @ values).reshape(B, C)
{body.strip()}
"""
    )


CATALOGUE = Catalogue(
    grader="kv_cache_decode",
    task="inference-engine/kv-cache-decode",
    reference=SOLUTIONS / "inference-engine" / "kv_decode_correct.py",
    styles=(
        CorrectStyle(
            "a loop over heads",
            _step(
                """
q, k, v = (x @ w_qkv + b_qkv).split(C, dim=-1)
heads = []
for h in range(H):
    cols = slice(h * D, (h + 1) * D)
    keys = torch.cat([k_cache[:, h, :p], k[:, None, cols]], dim=1)  # (B, p + 1, D)
    values = torch.cat([v_cache[:, h, :p], v[:, None, cols]], dim=1)
    scores = torch.einsum("bd,bjd->bj", q[:, cols], keys) / math.sqrt(D)
    heads.append(torch.einsum("bj,bjd->bd", torch.softmax(scores, dim=-1), values))
y = torch.cat(heads, dim=-1) @ w_proj + b_proj
return torch.stack([y, k, v], dim=1)
"""
            ),
        ),
        CorrectStyle(
            "two-part softmax: the cache and the new key apart, no concatenation",
            _step(
                """
q, k, v = (x @ w_qkv + b_qkv).split(C, dim=-1)
q = q.reshape(B, H, 1, D) * D**-0.5
new_k, new_v = k.reshape(B, H, 1, D), v.reshape(B, H, 1, D)
old = q @ k_cache[:, :, :p].transpose(-2, -1)  # (B, H, 1, p)
new = (q * new_k).sum(-1, keepdim=True)  # (B, H, 1, 1)
top = torch.maximum(old.amax(-1, keepdim=True), new) if p else new
e_old, e_new = (old - top).exp(), (new - top).exp()
total = e_old.sum(-1, keepdim=True) + e_new
out = (e_old @ v_cache[:, :, :p] + e_new * new_v) / total
y = out.reshape(B, C) @ w_proj + b_proj
return torch.stack([y, k, v], dim=1)
"""
            ),
        ),
        CorrectStyle(
            "the new key written into slot pos, then slots 0 … pos",
            _step(
                """
q, k, v = (x @ w_qkv + b_qkv).split(C, dim=-1)
k_cache[:, :, p] = k.reshape(B, H, D)
v_cache[:, :, p] = v.reshape(B, H, D)
scores = q.reshape(B, H, 1, D) @ k_cache[:, :, : p + 1].mT / math.sqrt(D)
y = (scores.softmax(-1) @ v_cache[:, :, : p + 1]).reshape(B, C) @ w_proj + b_proj
return torch.stack([y, k, v], dim=1)
"""
            ),
        ),
        CorrectStyle(
            "the whole buffer, unfilled slots zeroed and masked",
            _step(
                """
q, k, v = (x @ w_qkv + b_qkv).split(C, dim=-1)
T = k_cache.shape[2]
filled = (torch.arange(T) < p).reshape(1, 1, T, 1)
keys = torch.where(filled, k_cache, 0.0)
values = torch.where(filled, v_cache, 0.0)
keys[:, :, p] = k.reshape(B, H, D)
values[:, :, p] = v.reshape(B, H, D)
scores = q.reshape(B, H, 1, D) @ keys.transpose(-2, -1) / math.sqrt(D)
scores = scores.masked_fill(torch.arange(T) > p, float("-inf"))
y = (torch.softmax(scores, dim=-1) @ values).reshape(B, C) @ w_proj + b_proj
return torch.stack([y, k, v], dim=1)
"""
            ),
        ),
        CorrectStyle(
            "in float64, cast back",
            _step(
                """
f = torch.float64
qkv = x.to(f) @ w_qkv.to(f) + b_qkv.to(f)
q, k, v = qkv.split(C, dim=-1)
keys = torch.cat([k_cache[:, :, :p].to(f), k.reshape(B, H, 1, D)], dim=2)
values = torch.cat([v_cache[:, :, :p].to(f), v.reshape(B, H, 1, D)], dim=2)
scores = q.reshape(B, H, 1, D) @ keys.transpose(-2, -1) / math.sqrt(D)
y = (torch.softmax(scores, dim=-1) @ values).reshape(B, C) @ w_proj.to(f) + b_proj.to(f)
return torch.stack([y, k, v], dim=1).to(x.dtype)
"""
            ),
        ),
        CorrectStyle(
            "three separate projections, addmm and einsum",
            _step(
                """
k = torch.addmm(b_qkv[C : 2 * C], x, w_qkv[:, C : 2 * C])
v = torch.addmm(b_qkv[2 * C :], x, w_qkv[:, 2 * C :])
q = torch.addmm(b_qkv[:C], x, w_qkv[:, :C]) / math.sqrt(D)
keys = torch.cat([k_cache[:, :, :p], k.view(B, H, 1, D)], dim=2)
values = torch.cat([v_cache[:, :, :p], v.view(B, H, 1, D)], dim=2)
weights = torch.einsum("bhd,bhjd->bhj", q.view(B, H, D), keys).softmax(dim=-1)
attended = torch.einsum("bhj,bhjd->bhd", weights, values).reshape(B, C)
y = torch.addmm(b_proj, attended, w_proj)
return torch.stack([y, k, v], dim=1)
"""
            ),
        ),
    ),
    mistakes=(
        CommonMistake(
            "the cache read as (B, T, n_head, head_dim)",
            "decode_step",
            "read in another layout",
            _attend(
                f"torch.cat([k_cache.reshape(B, -1, H, D)[:, :p].transpose(1, 2), {_NEW_K}], 2)",
                f"torch.cat([v_cache.reshape(B, -1, H, D)[:, :p].transpose(1, 2), {_NEW_V}], 2)",
            ),
        ),
        CommonMistake(
            "attention over all T slots of the buffer",
            "decode_step",
            "not to all T slots of the buffer",
            _attend(
                f"torch.cat([k_cache, {_NEW_K}], dim=2)", f"torch.cat([v_cache, {_NEW_V}], dim=2)"
            ),
        ),
        CommonMistake(
            "slot pos of the cache in place of the new key",
            "decode_step",
            "not to slot pos of the cache in place of the new key",
            _attend("k_cache[:, :, : p + 1]", "v_cache[:, :, : p + 1]"),
        ),
        CommonMistake(
            "the new key written into slot pos, the whole buffer masked",
            "decode_step",
            "a weight of 0 times NaN is still NaN",
            (SOLUTIONS / "inference-engine" / "kv_decode_wrong_all_slots.py").read_text(),
        ),
        CommonMistake(
            "the cache without the new token",
            "decode_step",
            "the new token did not attend to itself",
            _attend("k_cache[:, :, :p]", "v_cache[:, :, :p]"),
        ),
        CommonMistake(
            "scores scaled by 1/sqrt(C)",
            "decode_step",
            "you divided the scores by sqrt(C)",
            _step(
                f"""
q, k, v = (x @ w_qkv + b_qkv).split(C, dim=-1)
scores = q.reshape(B, H, 1, D) @ {_CACHED_K}.transpose(-2, -1) / math.sqrt(C)
y = (torch.softmax(scores, dim=-1) @ {_CACHED_V}).reshape(B, C) @ w_proj + b_proj
return torch.stack([y, k, v], dim=1)
"""
            ),
        ),
        CommonMistake(
            "scores scaled by 1/head_dim",
            "decode_step",
            "you divided the scores by head_dim",
            _step(
                f"""
q, k, v = (x @ w_qkv + b_qkv).split(C, dim=-1)
scores = q.reshape(B, H, 1, D) @ {_CACHED_K}.transpose(-2, -1) / D
y = (torch.softmax(scores, dim=-1) @ {_CACHED_V}).reshape(B, C) @ w_proj + b_proj
return torch.stack([y, k, v], dim=1)
"""
            ),
        ),
        CommonMistake(
            "qkv split as k, q, v",
            "decode_step",
            "you split qkv as (k, q, v)",
            _attend(_CACHED_K, _CACHED_V, split="k, q, v = qkv.split(C, dim=-1)"),
        ),
        CommonMistake(
            "qkv split as q, v, k",
            "decode_step",
            "you split qkv as (q, v, k)",
            _attend(_CACHED_K, _CACHED_V, split="q, v, k = qkv.split(C, dim=-1)"),
        ),
        CommonMistake(
            "qkv split per head",
            "decode_step",
            "you split qkv per head",
            _attend(
                _CACHED_K,
                _CACHED_V,
                split="q, k, v = (t.reshape(B, C) for t in qkv.reshape(B, H, 3, D).unbind(2))",
            ),
        ),
        CommonMistake(
            "the output projection forgotten",
            "decode_step",
            "the output projection is missing",
            _finish("return torch.stack([attended, k, v], dim=1)"),
        ),
        CommonMistake(
            "the output projection's bias forgotten",
            "decode_step",
            "the output projection's bias is missing",
            _finish("return torch.stack([attended @ w_proj, k, v], dim=1)"),
        ),
        CommonMistake(
            "qkv without its bias",
            "decode_step",
            "qkv is missing its bias",
            _attend(_CACHED_K, _CACHED_V).replace("x @ w_qkv + b_qkv", "x @ w_qkv"),
        ),
        CommonMistake(
            "k_new and v_new returned without their bias",
            "decode_step",
            "lack their bias",
            _finish(
                """
y = attended @ w_proj + b_proj
k_plain, v_plain = (x @ w_qkv[:, C:]).split(C, dim=-1)
return torch.stack([y, k_plain, v_plain], dim=1)
"""
            ),
        ),
        CommonMistake(
            "k_new and v_new swapped",
            "decode_step",
            "k_new and v_new are swapped",
            _finish("return torch.stack([attended @ w_proj + b_proj, v, k], dim=1)"),
        ),
    ),
)
