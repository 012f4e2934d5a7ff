"""Hostile submissions that attack the result channel or the grader's trust in it."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import torch

from sandbox.client import Zygote
from tests.sandbox.support import ADD, FAST, add_call, reports, request, to_tensor

FORGE = """
import json, struct
def frame(header, payload=b""):
    head = json.dumps(header).encode()
    return struct.pack(">4sIQ", b"BRR1", len(head), len(payload)) + head + payload
forged = frame({"kind": "call", "function": "add", "label": "3x4", "status": "ok",
                "returned_type": "torch.Tensor", "tensor": {"dtype": "float32", "shape": [1]},
                "error": "", "ops": [], "duration_s": 0.0, "memory": False}, b"\\0\\0\\0\\0")
"""


def test_forged_frame_on_stdout_is_only_text(sandbox: Zygote) -> None:
    call, _ = add_call(7)
    a, b = (to_tensor(arg) for arg in call.args)
    source = (
        FORGE
        + "import sys\ndef add(a, b):\n    sys.stdout.buffer.write(forged)\n    return a - b\n"
    )
    result = sandbox.run(request(source, (call,)))
    assert result.status == "ok"
    assert '"kind": "call"' in result.stdout  # the forged frame was written, and kept as text
    (only,) = result.calls
    assert only.tensor is not None
    assert torch.equal(to_tensor(only.tensor), a - b)  # the real (wrong) answer came back


def test_forged_frames_on_inherited_descriptors_are_rejected(sandbox: Zygote) -> None:
    source = (
        FORGE
        + """
import os
written = []
for fd in range(3, 21):
    try:
        os.write(fd, forged)
        written.append(fd)
    except OSError:
        pass
print("written", written)
"""
        + ADD
    )
    result = sandbox.run(request(source))
    assert result.status == "protocol_error"
    # the forged frame reached the result pipe and was refused for what it is
    assert result.message.startswith("the job's reply was malformed: unexpected 'call' frame")
    assert all(call.tensor is None for call in result.calls)


def test_sys_exit_at_import(sandbox: Zygote) -> None:
    result = sandbox.run(request("import sys\nsys.exit(0)\n" + ADD))
    assert (result.status, result.message) == ("exited", "exited with code 0 during import")
    assert [call.status for call in result.calls] == ["skipped"]


def test_os_exit_at_import(sandbox: Zygote) -> None:
    result = sandbox.run(request("import os\nos._exit(0)\n" + ADD))
    assert (result.status, result.message) == ("exited", "exited with code 0 during import")


def test_sys_exit_with_a_message_inside_a_call(sandbox: Zygote) -> None:
    result = sandbox.run(request("import sys\ndef add(a, b):\n    sys.exit('bye')\n"))
    assert result.status == "exited"
    assert result.message == "exited with code 1 during call add (3x4)"
    assert result.stderr.strip() == "bye"


def test_object_with_reduce_is_never_unpickled(sandbox: Zygote, tmp_path: Path) -> None:
    marker = tmp_path / f"unpickled-{uuid.uuid4().hex}"
    source = f"""
import os
class Evil:
    def __reduce__(self):
        return (os.system, ("touch {marker}",))
def add(a, b):
    return Evil()
"""
    result = sandbox.run(request(source))
    assert result.status == "ok"
    (call,) = result.calls
    assert (call.returned_type, call.tensor) == ("submission.Evil", None)
    assert not marker.exists()


def test_segfault_is_reported_as_a_crash(sandbox: Zygote) -> None:
    source = "import ctypes\ndef add(a, b):\n    return ctypes.string_at(0)\n"
    result = sandbox.run(request(source))
    assert (result.status, result.message) == (
        "crashed",
        "crashed with SIGSEGV during call add (3x4)",
    )


def test_monkeypatched_torch_stays_inside_the_job(sandbox: Zygote) -> None:
    probe = """
def add(a, b):
    return torch.tensor([float(torch.allclose(torch.zeros(2), torch.ones(2)))])
"""
    patch = """
import torch
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
"""
    patched = sandbox.run(request(patch + probe)).calls[0].tensor
    assert patched is not None and to_tensor(patched).tolist() == [1.0]  # the patch took
    assert not torch.allclose(torch.zeros(2), torch.ones(2))  # this process is unaffected
    result = sandbox.run(request("import torch\n" + probe))  # a fresh fork: pristine torch
    tensor = result.calls[0].tensor
    assert tensor is not None and to_tensor(tensor).tolist() == [0.0]


def test_tensor_subclass_cannot_lie_about_its_bytes(sandbox: Zygote) -> None:
    call, expected = add_call(3)
    source = """
import torch
class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise SystemExit(3)
    def detach(self):
        raise SystemExit(4)
def add(a, b):
    return (a + b).as_subclass(Liar)
"""
    result = sandbox.run(request(source, (call,)))
    assert result.status == "ok"
    (only,) = result.calls
    assert only.returned_type == "submission.Liar"
    assert only.tensor is not None and torch.equal(to_tensor(only.tensor), expected)


def test_exception_with_hostile_str_is_still_reported(sandbox: Zygote) -> None:
    source = """
class Weird(Exception):
    def __str__(self):
        raise Weird()
def add(a, b):
    raise Weird()
"""
    result = sandbox.run(request(source))
    assert result.status == "ok"
    assert result.calls[0].status == "raised"
    # its __str__ did run (and fail), and the report survived it
    assert result.calls[0].error.splitlines()[-1] == "submission.Weird: <exception str() failed>"


def test_faked_clock_does_not_change_the_measured_wall_time(sandbox: Zygote) -> None:
    source = """
import time
real_sleep = time.sleep
def add(a, b):
    time.perf_counter = lambda: 0.0
    time.monotonic = lambda: 0.0
    print("clocks", time.perf_counter(), time.monotonic())
    real_sleep(0.5)
    return a + b
"""
    result = sandbox.run(request(source))
    assert result.status == "ok"
    assert reports(result.stdout, "clocks") == ["0.0 0.0"]  # the job's own clocks were faked
    assert result.wall_s >= 0.5  # measured by the zygote, outside the job
    assert result.calls[0].duration_s >= 0.5  # the runner bound its clock before the job ran


def test_device_cuda_falls_back_to_cpu_without_a_gpu(sandbox: Zygote) -> None:
    call, expected = add_call(5)
    source = "def add(a, b):\n    return (a + b).cpu() if a.device.type == 'cuda' else a + b\n"
    result = sandbox.run(request(source, (call,), device="cuda"))
    assert result.status == "ok"
    if not torch.cuda.is_available():
        assert result.device == "cpu"
    tensor = result.calls[0].tensor
    assert tensor is not None and torch.equal(to_tensor(tensor), expected)


def test_partial_results_survive_a_crash_in_a_later_call(sandbox: Zygote) -> None:
    first, expected = add_call(1, label="first")
    second, _ = add_call(2, label="second")
    source = """
import ctypes
calls = 0
def add(a, b):
    global calls
    calls += 1
    if calls == 2:
        ctypes.string_at(0)
    return a + b
"""
    limits = dataclasses.replace(FAST, wall_s=5.0)
    result = sandbox.run(request(source, (first, second), limits=limits))
    assert result.status == "crashed"
    done, crashed = result.calls
    assert done.tensor is not None and torch.equal(to_tensor(done.tensor), expected)
    assert (crashed.status, crashed.error) == ("skipped", result.message)
