"""numpy products: np.matmul, and np.dot on whole matrices."""

import numpy as np
import torch


def matmul_loops(A, B):
    return torch.from_numpy(np.matmul(A.numpy(), B.numpy()))


def matmul_dot(A, B):
    return torch.from_numpy(np.dot(A.numpy(), B.numpy()))


def matmul_columns(A, B):
    a = A.numpy()
    return torch.from_numpy(a.dot(B.numpy()))
