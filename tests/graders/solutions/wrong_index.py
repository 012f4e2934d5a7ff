"""Sizes every loop by the largest dimension, so any non-square input indexes out of range."""

import torch


def matmul_loops(A, B):
    n = max(*A.shape, *B.shape)
    C = torch.zeros(n, n, dtype=A.dtype)
    for i in range(n):
        for j in range(n):
            for p in range(n):
                C[i, j] += A[i, p] * B[p, j]
    return C


def matmul_dot(A, B):
    n = max(*A.shape, *B.shape)
    C = torch.zeros(n, n, dtype=A.dtype)
    for i in range(n):
        for j in range(n):
            C[i, j] = torch.dot(A[i], B[:, j])
    return C


def matmul_columns(A, B):
    n = max(*A.shape, *B.shape)
    C = torch.zeros(n, n, dtype=A.dtype)
    for j in range(n):
        for p in range(n):
            C[:, j] += B[p, j] * A[:, p]
    return C
