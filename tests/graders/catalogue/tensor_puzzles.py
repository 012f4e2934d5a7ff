"""tensor-puzzles/broadcasting-drills: index, orientation and dtype slips over six puzzles."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

CATALOGUE = Catalogue(
    grader="tensor_puzzles",
    task="tensor-puzzles/broadcasting-drills",
    reference=SOLUTIONS / "tensor-puzzles" / "correct.py",
    styles=(
        CorrectStyle(
            "unsqueeze and implicit broadcasting",
            """
def outer(a, b):
    return a.unsqueeze(1) * b


def diag(a):
    return a[torch.arange(len(a)), torch.arange(len(a))]


def triu(a):
    i = torch.arange(a.shape[0])
    return a * (i.unsqueeze(1) <= i)


def cumsum(a):
    i = torch.arange(a.shape[0])
    return torch.where(i <= i.unsqueeze(1), a, 0).sum(-1)


def flip(a):
    return a[torch.arange(a.shape[0] - 1, -1, -1)]


def relu(a):
    return a * (a > 0)
""",
        ),
        CorrectStyle(
            "view, flat strided indexing, negative indices",
            """
def outer(a, b):
    return a.view(-1, 1) * b.view(1, -1)


def diag(a):
    n = a.shape[0]
    return a.reshape(-1)[:: n + 1]


def triu(a):
    i = torch.arange(a.shape[0])
    return torch.where(i[:, None] > i[None, :], torch.zeros_like(a), a)


def cumsum(a):
    i = torch.arange(a.shape[0])
    return (a.double()[None, :] * (i[None, :] <= i[:, None])).sum(1).to(a.dtype)


def flip(a):
    return a[-1 - torch.arange(a.shape[0])]


def relu(a):
    return torch.where(a < 0, 0, a)
""",
        ),
        CorrectStyle(
            "masks as sums and products",
            """
def diag(a):
    i = torch.arange(a.shape[0])
    return (a * (i[:, None] == i[None, :])).sum(1)


def cumsum(a):
    n = a.shape[0]
    i = torch.arange(n)
    return (a.expand(n, n) * (i[None, :] <= i[:, None])).sum(dim=1)
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "outer with a and b swapped",
            "outer",
            "roles of a and b",
            """
def outer(a, b):
    return b[:, None] * a[None, :]
""",
        ),
        CommonMistake(
            "diag indexing rows twice",
            "diag",
            "a[i][i]",
            """
def diag(a):
    i = torch.arange(a.shape[0])
    return a[i][i]
""",
        ),
        CommonMistake(
            "diag of the anti-diagonal",
            "diag",
            "anti-diagonal",
            """
def diag(a):
    n = a.shape[0]
    i = torch.arange(n)
    return a[i, n - 1 - i]
""",
        ),
        CommonMistake(
            "triu without the diagonal",
            "triu",
            "zeroed the diagonal",
            """
def triu(a):
    i = torch.arange(a.shape[0])
    return torch.where(i[None, :] > i[:, None], a, 0)
""",
        ),
        CommonMistake(
            "tril instead of triu",
            "triu",
            "lower triangle",
            """
def triu(a):
    i = torch.arange(a.shape[0])
    return torch.where(i[None, :] <= i[:, None], a, 0)
""",
        ),
        CommonMistake(
            "exclusive running sum",
            "cumsum",
            "exclusive running sum",
            """
def cumsum(a):
    i = torch.arange(a.shape[0])
    return ((i[None, :] < i[:, None]) * a[None, :]).sum(1)
""",
        ),
        CommonMistake(
            "running sum from the end",
            "cumsum",
            "sums from i to the end",
            """
def cumsum(a):
    i = torch.arange(a.shape[0])
    return ((i[None, :] >= i[:, None]) * a[None, :]).sum(1)
""",
        ),
        CommonMistake(
            "cumsum mask summed over the wrong axis",
            "cumsum",
            "summed over the wrong axis",
            """
def cumsum(a):
    i = torch.arange(a.shape[0])
    return ((i[None, :] <= i[:, None]) * a[None, :]).sum(0)
""",
        ),
        CommonMistake(
            "cumsum with a float mask",
            "cumsum",
            "float mask",
            """
def cumsum(a):
    i = torch.arange(a.shape[0])
    return ((i[None, :] <= i[:, None]).float() * a[None, :]).sum(1)
""",
        ),
        CommonMistake(
            "flip with a[-i]",
            "flip",
            "a[-i]",
            """
def flip(a):
    return a[-torch.arange(a.shape[0])]
""",
        ),
        CommonMistake(
            "relu as the absolute value",
            "relu",
            "absolute value",
            """
def relu(a):
    return torch.where(a > 0, a, -a)
""",
        ),
        CommonMistake(
            "relu with a float zero",
            "relu",
            "float zero",
            """
def relu(a):
    return torch.where(a > 0, a, 0.0)
""",
        ),
        CommonMistake(
            "relu with the branches of where swapped",
            "relu",
            "branches of torch.where",
            """
def relu(a):
    return torch.where(a > 0, 0, a)
""",
        ),
    ),
)
