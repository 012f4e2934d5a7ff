"""Returns nested Python lists instead of a tensor."""


def matmul_loops(A, B):
    return [
        [sum(float(A[i, p] * B[p, j]) for p in range(A.shape[1])) for j in range(B.shape[1])]
        for i in range(A.shape[0])
    ]


matmul_dot = matmul_loops
matmul_columns = matmul_loops
