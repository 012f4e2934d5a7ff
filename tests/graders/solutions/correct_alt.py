"""Also correct, written differently: Python floats, elementwise sums, a helper."""

import torch


def matmul_loops(A, B):
    rows = []
    for i in range(A.shape[0]):
        row = []
        for j in range(B.shape[1]):
            total = 0.0
            for p in range(A.shape[1]):
                total += float(A[i, p]) * float(B[p, j])
            row.append(total)
        rows.append(row)
    return torch.tensor(rows, dtype=A.dtype)


def _entry(row, column):
    return (row * column).sum()


def matmul_dot(A, B):
    Bt = B.T
    return torch.stack([torch.stack([_entry(a, b) for b in Bt]) for a in A])


def matmul_columns(A, B):
    columns = [sum(B[p, j] * A[:, p] for p in range(A.shape[1])) for j in range(B.shape[1])]
    return torch.stack(columns, dim=1)
