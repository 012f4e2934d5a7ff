"""Wrong: applies b_lora first, as if it were the down-projection."""


def lora_linear(x, w, b, a, b_lora, alpha):
    scale = alpha / a.shape[0]
    return x @ w.T + b + scale * ((x @ b_lora) @ a)


def merge_lora(w, a, b_lora, alpha):
    return w + (alpha / a.shape[0]) * (a.T @ b_lora.T)
