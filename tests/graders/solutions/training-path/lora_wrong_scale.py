"""Wrong: scales the update by alpha, forgetting to divide by the rank."""


def lora_linear(x, w, b, a, b_lora, alpha):
    return x @ w.T + b + alpha * ((x @ a.T) @ b_lora.T)


def merge_lora(w, a, b_lora, alpha):
    return w + alpha * (b_lora @ a)
