"""The forbidden-op rule: honest solutions pass, whole-matrix products fail, however hidden."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.intake.submission_input import UploadLimits, validate_submission
from graders.source_scan import forbidden_ops, scan

SOLUTIONS = Path(__file__).parent / "solutions"
FUNCTIONS = ("matmul_loops", "matmul_dot", "matmul_columns")


def findings(source: str, function: str = "f") -> list[str]:
    report = scan(source, [function])[function]
    assert report.found, "the function should have been found"
    return [str(f) for f in report.findings]


@pytest.mark.parametrize("name", ["correct.py", "correct_alt.py", "wrong_values.py"])
def test_honest_files_have_no_findings(name: str) -> None:
    reports = scan((SOLUTIONS / name).read_text(), FUNCTIONS)
    assert all(r.found and not r.findings and not r.problem for r in reports.values())


def test_the_converted_notebook_has_no_findings() -> None:
    data = (SOLUTIONS / "correct_magics.ipynb").read_bytes()
    source = validate_submission("correct_magics.ipynb", data, UploadLimits.defaults()).source
    assert "A @ B" in source  # in a top-level check cell, which is not scanned
    reports = scan(source, FUNCTIONS)
    assert all(r.found and not r.findings for r in reports.values())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "cheat_operator.py",
            {
                "matmul_loops": "line 7 `return A @ B`: the @ operator is a matrix product",
                "matmul_dot": "line 11 `return torch.matmul(A, B)`: matmul is a whole-matrix",
                "matmul_columns": "line 17 `C[:, j] = A @ B[:, j]`: the @ operator",
            },
        ),
        (
            "cheat_hidden.py",
            {
                "matmul_loops": "`from torch import matmul as mul`: imports torch.matmul",
                "matmul_dot": "line 8 `return X.mm(Y)`: mm is a whole-matrix product",
                "matmul_columns": "`return F.linear(A, B.T)`: linear is a whole-matrix product",
            },
        ),
        (
            "cheat_dynamic.py",
            {
                "matmul_loops": "getattr with a computed name hides what is called",
                "matmul_dot": "einsum is a whole-matrix product",
                "matmul_columns": "tensordot is a whole-matrix product",
            },
        ),
        (
            "cheat_numpy.py",
            {
                "matmul_loops": "matmul is a whole-matrix product",
                "matmul_dot": "dot of whole matrices is a matrix product; use a row and a column",
                "matmul_columns": "line 17 `return torch.from_numpy(a.dot(B.numpy()))`: dot of",
            },
        ),
        (
            "wrong_list.py",
            {
                "matmul_dot": "uses matmul_loops: each function must work on its own",
                "matmul_columns": "uses matmul_loops: each function must work on its own",
            },
        ),
    ],
)
def test_cheating_files_are_caught(name: str, expected: dict[str, str]) -> None:
    reports = scan((SOLUTIONS / name).read_text(), FUNCTIONS)
    for function, reason in expected.items():
        text = "; ".join(str(f) for f in reports[function].findings)
        assert reason in text, (function, text)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("def f(A, B):\n    return A @ B\n", "the @ operator"),
        ("def f(A, B):\n    C = A.clone()\n    C @= B\n    return C\n", "the @ operator"),
        ("import torch\ndef f(A, B):\n    return torch.mm(A, B)\n", "mm is"),
        ("import torch\ndef f(A, B):\n    return torch.bmm(A[None], B[None])[0]\n", "bmm is"),
        ("import torch\ndef f(A, B):\n    return torch.linalg.matmul(A, B)\n", "matmul is"),
        ("def f(A, B):\n    return A.matmul(B)\n", "matmul is"),
        ("def f(A, B):\n    return A.__matmul__(B)\n", "__matmul__ is"),
        ("import operator\ndef f(A, B):\n    return operator.matmul(A, B)\n", "matmul is"),
        ("from torch import *\ndef f(A, B):\n    return matmul(A, B)\n", "matmul is"),
        ("import torch\ndef f(A, B):\n    return torch.inner(A, B.T)\n", "inner of whole"),
        ("import numpy as np\ndef f(A, B):\n    return np.dot(A.tolist(), B.tolist())\n", "dot of"),
        ("import numpy as np\ndef f(A, B):\n    return np.dot(np.asarray(A), B[:, :])\n", "dot of"),
        ("from numpy import dot\ndef f(A, B):\n    return dot(A, B)\n", "dot of whole"),
        (
            "import numpy as np\ndef f(A, B):\n    x = A.numpy()\n    y = x\n    return y.dot(B)\n",
            "dot",
        ),
        ("import torch\ndef f(A, B):\n    return getattr(torch, 'matmul')(A, B)\n", "'matmul'"),
        ("import torch\nf = lambda A, B: torch.einsum('ij,jk->ik', A, B)\n", "einsum is"),
        ("import functools, torch\nf = functools.partial(torch.matmul)\n", "matmul is"),
        ("def g(X, Y):\n    return X @ Y\nf = g\n", "the @ operator"),
        ("def f(A, B):\n    from torch import matmul\n    return matmul(A, B)\n", "imports matmul"),
        ("def f(A, B):\n    return eval('A @ B')\n", "eval runs or finds code"),
        (
            "import importlib\ndef f(A, B):\n    return importlib.import_module('torch')",
            "importlib",
        ),
        # a decorator replaces the function it decorates
        (
            "import torch\ndef d(fn):\n    return torch.mm\n@d\ndef f(A, B):\n    return A\n",
            "mm is",
        ),
        # a default argument is part of the definition
        ("import torch\ndef f(A, B, op=torch.matmul):\n    return op(A, B)\n", "matmul is"),
        # the function rebound at top level after a clean def
        ("def f(A, B):\n    return A\nif True:\n    f = lambda A, B: A.mm(B)\n", "mm is"),
        # helpers are followed, with whole matrices traced into their parameters
        (
            "import numpy as np\ndef h(X, Y):\n    return np.dot(X, Y)\n"
            "def f(A, B):\n    return h(A, B)\n",
            "dot",
        ),
        ("def h(X):\n    return X @ X\ndef f(A, B):\n    return h(A[0])\n", "the @ operator"),
        (
            "import torch\ndef h():\n    return torch.matmul\ndef f(A, B):\n    return h()(A, B)\n",
            "matmul",
        ),
        # dynamic code at module level could replace the function after the scan's view of it
        ("def f(A, B):\n    return A\nglobals()['f'] = lambda A, B: A\n", "globals runs or finds"),
        (
            "import numpy as np\ndef f(A, B):\n    return sum(map(np.dot, A, B.T))\n",
            "passes dot around",
        ),
    ],
)
def test_whole_matrix_products_are_flagged(source: str, reason: str) -> None:
    assert any(reason in f for f in findings(source)), findings(source)


@pytest.mark.parametrize(
    "source",
    [
        # a 1-D dot product per entry is exactly what matmul_dot should do
        "import torch\ndef f(A, B):\n    return torch.dot(A[0], B[:, 0])\n",
        "def f(A, B):\n    return A[0].dot(B[:, 0])\n",
        "def f(A, B):\n    return (A[0] * B[:, 0]).sum()\n",
        "import numpy as np\ndef f(A, B):\n    a = A.numpy()\n"
        "    return np.dot(a[0], B.numpy()[:, 0])\n",
        # a helper that takes vectors may use dot
        "import torch\ndef d(u, v):\n    return torch.dot(u, v)\n"
        "def f(A, B):\n    return d(A[0], B.T[0])\n",
        # the notebook pattern: an early experiment redefined in a later cell
        "def f(A, B):\n    return A @ B\n\ndef f(A, B):\n    return A * B\n",
        # a product outside the function, e.g. a check cell
        "import torch\ndef f(A, B):\n    return A * B\n"
        "print(torch.randn(2, 2) @ torch.randn(2, 2))\n",
        # local names that happen to look like forbidden ones
        "def f(A, B):\n    mm = A.shape[0]\n    return A * mm\n",
        "def f(A, B):\n    '''Unlike matmul, this is elementwise.'''\n    return A * B\n",
    ],
)
def test_honest_code_is_not_flagged(source: str) -> None:
    assert findings(source) == []


def test_a_missing_function_is_reported_as_not_found() -> None:
    report = scan("def g(A, B):\n    return A\n", ["f"])["f"]
    assert not report.found and not report.findings


@pytest.mark.parametrize(
    "source",
    [
        "def f(A, B)\n",
        "x = 1\0\n",
        "x = " + "(" * 300 + ")" * 300 + "\n",
        "y=" + "-" * 100_000 + "1\n",
    ],
)
def test_unanalysable_sources_are_a_problem_not_a_crash(source: str) -> None:
    report = scan(source, ["f"])["f"]
    assert not report.found and "could not analyse" in report.problem


def test_recorded_ops_flag_only_whole_matrix_products() -> None:
    recorded = [
        "aten::mm.default",
        "torch.matmul",
        "Tensor.__matmul__",
        "linear",
        "aten::einsum",
        "dot",
        "aten::dot",
        "torch.sum",
        "aten::mul.Tensor",
        "zeros",
        "Tensor.__getitem__",
    ]
    assert forbidden_ops(recorded) == (
        "Tensor.__matmul__",
        "aten::einsum",
        "aten::mm.default",
        "linear",
        "torch.matmul",
    )
