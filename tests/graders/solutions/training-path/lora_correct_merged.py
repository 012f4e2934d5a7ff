"""Also right: fold the adapter into the weight first, then one product with x."""


def merge_lora(w, a, b_lora, alpha):
    rank = a.shape[0]
    return w + float(alpha) / rank * (b_lora @ a)


def lora_linear(x, w, b, a, b_lora, alpha):
    return x @ merge_lora(w, a, b_lora, alpha).T + b
