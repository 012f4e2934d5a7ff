"""Wrong: the epsilon sits outside the square root (std + eps); it only shows where a row's
values barely vary."""

import math

import torch


def layer_norm(x, weight, bias):
    mean = x.mean(dim=-1, keepdim=True)
    std = x.std(dim=-1, keepdim=True, unbiased=False)
    return (x - mean) / (std + 1e-5) * weight + bias


def causal_self_attention(x, w_qkv, b_qkv, w_proj, b_proj, n_head):
    batch, seq, width = x.shape
    heads = int(n_head)
    head_dim = width // heads
    q, k, v = (x @ w_qkv.T + b_qkv).split(width, dim=-1)
    q, k, v = (t.view(batch, seq, heads, head_dim).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    future = torch.ones(seq, seq, dtype=torch.bool).triu(diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    y = (weights @ v).transpose(1, 2).reshape(batch, seq, width)
    return y @ w_proj.T + b_proj


def mlp(x, w_fc, b_fc, w_proj, b_proj):
    h = x @ w_fc.T + b_fc
    h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))
    return h @ w_proj.T + b_proj


def gpt2_block(
    x,
    ln_1_weight,
    ln_1_bias,
    w_qkv,
    b_qkv,
    w_attn_proj,
    b_attn_proj,
    ln_2_weight,
    ln_2_bias,
    w_fc,
    b_fc,
    w_mlp_proj,
    b_mlp_proj,
    n_head,
):
    h = layer_norm(x, ln_1_weight, ln_1_bias)
    x = x + causal_self_attention(h, w_qkv, b_qkv, w_attn_proj, b_attn_proj, n_head)
    h = layer_norm(x, ln_2_weight, ln_2_bias)
    return x + mlp(h, w_fc, b_fc, w_mlp_proj, b_mlp_proj)
