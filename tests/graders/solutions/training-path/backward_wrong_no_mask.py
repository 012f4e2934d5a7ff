"""Wrong: the gradient skips the ReLU, as if every unit were active."""

import torch


def forward(x, w1, b1, w2, b2):
    z = x @ w1.T + b1
    h = torch.relu(z)
    return z, h, h @ w2.T + b2


def grad_y(x, w1, b1, w2, b2, t):
    """dloss/dy: the mean divides by every entry of y, not just the batch size."""
    _, _, y = forward(x, w1, b1, w2, b2)
    return 2 * (y - t) / y.numel()


def grad_z(x, w1, b1, w2, b2, t):
    """Back through the second layer, then (forgotten) through the ReLU."""
    return grad_y(x, w1, b1, w2, b2, t) @ w2


def grad_w1(x, w1, b1, w2, b2, t):
    return grad_z(x, w1, b1, w2, b2, t).T @ x


def grad_b1(x, w1, b1, w2, b2, t):
    return grad_z(x, w1, b1, w2, b2, t).sum(dim=0)


def grad_w2(x, w1, b1, w2, b2, t):
    _, h, _ = forward(x, w1, b1, w2, b2)
    return grad_y(x, w1, b1, w2, b2, t).T @ h


def grad_b2(x, w1, b1, w2, b2, t):
    return grad_y(x, w1, b1, w2, b2, t).sum(dim=0)
