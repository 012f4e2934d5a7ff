"""Right answers, wrong method: the @ operator and torch.matmul."""

import torch


def matmul_loops(A, B):
    return A @ B


def matmul_dot(A, B):
    return torch.matmul(A, B)


def matmul_columns(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for j in range(B.shape[1]):
        C[:, j] = A @ B[:, j]
    return C
