"""go-brrrr/matmul-three-ways: index, loop-range, dtype and accumulation slips."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

CATALOGUE = Catalogue(
    grader="matmul_three_ways",
    task="go-brrrr/matmul-three-ways",
    reference=SOLUTIONS / "correct.py",
    styles=(
        CorrectStyle(
            "Python floats, (a * b).sum(), columns stacked",
            """
import torch

def matmul_loops(A, B):
    rows = []
    for i in range(A.shape[0]):
        row = []
        for j in range(B.shape[1]):
            total = 0.0
            for p in range(A.shape[1]):
                total += A[i, p].item() * B[p, j].item()
            row.append(total)
        rows.append(row)
    return torch.tensor(rows, dtype=A.dtype)

def matmul_dot(A, B):
    C = A.new_zeros(A.shape[0], B.shape[1])
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            C[i, j] = (A[i] * B[:, j]).sum()
    return C

def matmul_columns(A, B):
    columns = []
    for j in range(B.shape[1]):
        column = torch.zeros(A.shape[0], dtype=A.dtype)
        for p in range(A.shape[1]):
            column = column + B[p, j] * A[:, p]
        columns.append(column)
    return torch.stack(columns, dim=1)
""",
        ),
        CorrectStyle(
            "a 0-d tensor accumulator, torch.sum, a broadcast weighted sum",
            """
import torch

def matmul_loops(A, B):
    n, k = A.shape
    m = B.shape[1]
    C = torch.zeros((n, m), dtype=A.dtype, device=A.device)
    for i in range(n):
        for j in range(m):
            acc = torch.zeros((), dtype=A.dtype)
            for p in range(k):
                acc = acc + A[i, p] * B[p, j]
            C[i, j] = acc
    return C

def matmul_dot(A, B):
    C = torch.empty(A.shape[0], B.shape[1], dtype=A.dtype)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            C[i, j] = torch.sum(A[i, :] * B[:, j])
    return C

def matmul_columns(A, B):
    columns = [(A * B[:, j]).sum(dim=1, keepdim=True) for j in range(B.shape[1])]
    return torch.cat(columns, dim=1)
""",
        ),
        CorrectStyle(
            "in float64, cast back to the inputs' dtype",
            """
import torch

def matmul_loops(A, B):
    a, b = A.double(), B.double()
    C = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            for p in range(a.shape[1]):
                C[i, j] += a[i, p] * b[p, j]
    return C.to(A.dtype)

def matmul_dot(A, B):
    a, b = A.to(torch.float64), B.to(torch.float64)
    rows = [torch.stack([torch.dot(a[i], b[:, j]) for j in range(b.shape[1])])
            for i in range(a.shape[0])]
    return torch.stack(rows).to(A.dtype)

def matmul_columns(A, B):
    a, b = A.double(), B.double()
    C = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64)
    for j in range(b.shape[1]):
        C[:, j] = sum(b[p, j] * a[:, p] for p in range(a.shape[1]))
    return C.type(A.dtype)
""",
        ),
        CorrectStyle(
            "itertools.product, a transposed B, columns written into C.T",
            """
import itertools
import torch

def matmul_loops(A, B):
    (n, k), m = A.shape, B.shape[1]
    C = A.new_zeros((n, m))
    for i, j, p in itertools.product(range(n), range(m), range(k)):
        C[i, j] = C[i, j] + A[i][p] * B[p][j]
    return C

def matmul_dot(A, B):
    Bt = B.t().contiguous()
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for i, row in enumerate(A):
        for j, column in enumerate(Bt):
            C[i, j] = torch.dot(row, column)
    return C

def matmul_columns(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for j in range(B.shape[1]):
        for p in range(A.shape[1]):
            C.T[j] += A[:, p] * B[p, j]
    return C
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "torch.zeros without dtype",
            "matmul_loops",
            "dtype=A.dtype",
            """
def matmul_loops(A, B):
    C = torch.zeros(A.shape[0], B.shape[1])
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for p in range(A.shape[1]):
                C[i, j] += A[i, p] * B[p, j]
    return C
""",
        ),
        CommonMistake(
            "a float32 accumulator, converted at the end",
            "matmul_columns",
            "only float32 precision",
            """
def matmul_columns(A, B):
    C = torch.zeros(A.shape[0], B.shape[1])
    for j in range(B.shape[1]):
        for p in range(A.shape[1]):
            C[:, j] += B[p, j] * A[:, p]
    return C.to(A.dtype)
""",
        ),
        CommonMistake(
            "transposed result, C[j, i]",
            "matmul_dot",
            "transpose",
            """
def matmul_dot(A, B):
    C = torch.zeros(B.shape[1], A.shape[0], dtype=A.dtype)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            C[j, i] = torch.dot(A[i], B[:, j])
    return C
""",
        ),
        CommonMistake(
            "B @ A: the factors swapped",
            "matmul_loops",
            "B @ A",
            """
def matmul_loops(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for p in range(A.shape[1]):
                C[i, j] += B[i, p] * A[p, j]
    return C
""",
        ),
        CommonMistake(
            "= instead of += in the inner loop",
            "matmul_loops",
            "only the last term",
            """
def matmul_loops(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for p in range(A.shape[1]):
                C[i, j] = A[i, p] * B[p, j]
    return C
""",
        ),
        CommonMistake(
            "inner loop range(k - 1)",
            "matmul_loops",
            "misses the last term",
            """
def matmul_loops(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for p in range(A.shape[1] - 1):
                C[i, j] += A[i, p] * B[p, j]
    return C
""",
        ),
        CommonMistake(
            "row loop range(m - 1)",
            "matmul_dot",
            "last row",
            """
def matmul_dot(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for i in range(A.shape[0] - 1):
        for j in range(B.shape[1]):
            C[i, j] = torch.dot(A[i], B[:, j])
    return C
""",
        ),
        CommonMistake(
            "column loop range(n - 1)",
            "matmul_columns",
            "last column",
            """
def matmul_columns(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for j in range(B.shape[1] - 1):
        for p in range(A.shape[1]):
            C[:, j] += B[p, j] * A[:, p]
    return C
""",
        ),
        CommonMistake(
            "elementwise A[i, j] * B[i, j]",
            "matmul_loops",
            "elementwise product",
            """
def matmul_loops(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            C[i, j] = A[i, j] * B[i, j]
    return C
""",
        ),
        CommonMistake(
            "row j of B instead of column j",
            "matmul_dot",
            "row j of B",
            """
def matmul_dot(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            C[i, j] = torch.dot(A[i], B[j])
    return C
""",
        ),
        CommonMistake(
            "a column rebound, never written back",
            "matmul_columns",
            "all zeros",
            """
def matmul_columns(A, B):
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for j in range(B.shape[1]):
        column = C[:, j]
        for p in range(A.shape[1]):
            column = column + B[p, j] * A[:, p]
    return C
""",
        ),
    ),
)
