"""A LoRA linear layer and its merged weight (scaling alpha / r, as in the paper)."""


def lora_linear(x, w, b, a, b_lora, alpha):
    scale = alpha / a.shape[0]
    return x @ w.T + b + scale * ((x @ a.T) @ b_lora.T)


def merge_lora(w, a, b_lora, alpha):
    return w + (alpha / a.shape[0]) * (b_lora @ a)
