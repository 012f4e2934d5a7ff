"""Off by one: every function skips the last term of the inner sum."""

import torch


def matmul_loops(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for p in range(A.shape[1] - 1):
                C[i, j] += A[i, p] * B[p, j]
    return C


def matmul_dot(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            C[i, j] = torch.dot(A[i, :-1], B[:-1, j])
    return C


def matmul_columns(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for j in range(B.shape[1]):
        for p in range(A.shape[1] - 1):
            C[:, j] += B[p, j] * A[:, p]
    return C
