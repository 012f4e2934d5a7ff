"""Correct: log-sum-exp first, then exp(x - lse). In float32 near 1000, lse is rounded to
a spacing of 6e-5, so this is within about 3e-5 relative: inside the stated 2e-4."""


def softmax(x):
    m = x.max(dim=-1, keepdim=True).values
    lse = m + (x - m).exp().sum(dim=-1, keepdim=True).log()
    return (x - lse).exp()
