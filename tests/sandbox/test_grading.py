"""Ordinary submissions: what a grader gets back from a working sandbox."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading

import pytest
import torch

from sandbox import isolation
from sandbox.api import Call
from sandbox.client import Zygote
from tests.sandbox.support import ADD, FAST, add_call, raw, request, to_tensor

DTYPES = (
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.int8,
    torch.uint8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.bool,
)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_allowed_dtype_round_trips(sandbox: Zygote, dtype: torch.dtype) -> None:
    value = (torch.arange(12) % 3).reshape(3, 4).to(dtype)
    call = Call("echo", (raw(value),), "echo")
    result = sandbox.run(request("def echo(x):\n    return x.clone()\n", (call,)))
    tensor = result.calls[0].tensor
    assert tensor is not None and tensor.dtype == str(dtype).removeprefix("torch.")
    assert torch.equal(to_tensor(tensor), value)


def test_empty_and_scalar_tensors(sandbox: Zygote) -> None:
    calls = (
        Call("echo", (raw(torch.empty(0, 5)),), "empty"),
        Call("echo", (raw(torch.tensor(2.5)),), "scalar"),
    )
    result = sandbox.run(request("def echo(x):\n    return x * 2\n", calls))
    empty, scalar = (c.tensor for c in result.calls)
    assert empty is not None and empty.shape == (0, 5) and empty.data == b""
    assert scalar is not None and scalar.shape == () and to_tensor(scalar).item() == 5.0


def test_missing_and_uncallable_functions(sandbox: Zygote) -> None:
    calls = (add_call()[0], dataclasses.replace(add_call()[0], function="mul"))
    result = sandbox.run(request("add = 3\n", calls))
    assert result.status == "ok"
    (add, mul) = result.calls
    assert (add.status, add.returned_type) == ("not_callable", "int")
    assert mul.status == "not_defined"


def test_raised_error_shows_only_learner_frames(sandbox: Zygote) -> None:
    source = (
        "import torch\n\ndef add(a, b):\n    return helper(a)\n\ndef helper(a):\n    return a @ a\n"
    )
    result = sandbox.run(request(source))
    (call,) = result.calls
    assert call.status == "raised"
    assert 'File "submission.py", line 4, in add' in call.error
    assert 'File "submission.py", line 7, in helper' in call.error
    assert call.error.splitlines()[-1].startswith("RuntimeError: mat1 and mat2 shapes")
    assert "sandbox" not in call.error and "torch/" not in call.error


def test_syntax_error_is_a_load_error(sandbox: Zygote) -> None:
    result = sandbox.run(request("def add(a, b)\n    return a + b\n"))
    assert result.status == "load_error"
    assert "SyntaxError" in result.message and 'File "submission.py", line 1' in result.message
    assert [c.status for c in result.calls] == ["skipped"]


def test_host_only_modules_are_not_importable(sandbox: Zygote) -> None:
    result = sandbox.run(request("import fractions, sqlite3\nimport graders.base\n" + ADD))
    assert result.status == "load_error"  # the standard library loads, the bot's code is absent
    assert "ModuleNotFoundError: No module named 'graders'" in result.message


def test_ops_are_traced_only_when_asked(sandbox: Zygote) -> None:
    source = "import torch\ndef add(a, b):\n    return torch.relu(a @ b.T) + 1\n"
    traced = sandbox.run(request(source)).calls[0]
    assert {"torch.Tensor.matmul", "torch.relu"} <= set(traced.ops)
    plain = sandbox.run(request(source, trace_ops=False)).calls[0]
    assert plain.ops == () and plain.status == "ok"


def test_prints_and_non_tensor_returns(sandbox: Zygote) -> None:
    source = """
import sys
print("loading")
def add(a, b):
    print("adding", file=sys.stderr)
    return [a]
"""
    result = sandbox.run(request(source))
    assert (result.stdout, result.stderr) == ("loading\n", "adding\n")
    assert (result.calls[0].returned_type, result.calls[0].tensor) == ("list", None)


def test_unreturnable_tensors_are_explained(sandbox: Zygote) -> None:
    calls = (add_call()[0], dataclasses.replace(add_call()[0], function="sparse"))
    source = """
import torch
def add(a, b):
    return a.to(torch.complex64)
def sparse(a, b):
    return a.to_sparse()
"""
    result = sandbox.run(request(source, calls))
    complex_call, sparse_call = result.calls
    assert complex_call.tensor is None and "complex64" in complex_call.error
    assert sparse_call.tensor is None and "sparse" in sparse_call.error


def test_thread_count_follows_the_limits(sandbox: Zygote) -> None:
    source = "import torch\ndef add(a, b):\n    return torch.tensor(torch.get_num_threads())\n"
    result = sandbox.run(request(source, limits=dataclasses.replace(FAST, threads=2)))
    tensor = result.calls[0].tensor
    assert tensor is not None and to_tensor(tensor).item() == 2


def test_concurrent_runs_are_serialised(sandbox: Zygote) -> None:
    results = []

    def grade(seed: int) -> None:
        call, expected = add_call(seed)
        tensor = sandbox.run(request(ADD, (call,))).calls[0].tensor
        results.append(tensor is not None and torch.equal(to_tensor(tensor), expected))

    threads = [threading.Thread(target=grade, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 4


def test_isolation_report_on_this_machine(sandbox: Zygote) -> None:
    layers = sandbox.isolation_report()
    assert isolation.minimum_ok(layers)
    table = isolation.format_report(layers)
    assert all(layer.name in table for layer in layers)
    if os.geteuid() == 0:
        assert [layer.name for layer in layers if not layer.active] == []


def test_a_killed_zygote_is_replaced_on_the_next_run(zygote: Zygote) -> None:
    old = zygote.pid
    assert old is not None
    os.kill(old, signal.SIGKILL)
    call, expected = add_call(9)
    result = zygote.run(request(ADD, (call,)))
    assert zygote.pid != old and zygote.alive
    tensor = result.calls[0].tensor
    assert tensor is not None and torch.equal(to_tensor(tensor), expected)


def test_closed_zygote_exits_and_restarts_on_demand() -> None:
    zygote = Zygote()
    with zygote:
        pid = zygote.pid
        assert pid is not None
    assert not zygote.alive
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert zygote.run(request(ADD)).status == "ok"
    zygote.close()
