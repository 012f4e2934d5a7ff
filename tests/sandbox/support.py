"""Helpers for the sandbox tests: tensors as RawTensor, fast limits, health checks."""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

import torch

from sandbox.api import Call, KiB, Limits, MiB, RawTensor, SandboxRequest, SandboxResult
from sandbox.client import Zygote

# Set before any zygote starts, like a worker's token: it must never reach a job.
SECRET_ENV = "BRRRBOT_TEST_SECRET"
SECRET_VALUE = "env-secret-7c1f9a2b"
os.environ[SECRET_ENV] = SECRET_VALUE

FAST = Limits(
    wall_s=3.0,
    cpu_s=2.0,
    memory_bytes=512 * MiB,
    processes=32,
    file_bytes=1 * MiB,
    scratch_bytes=8 * MiB,
    output_bytes=4 * MiB,
    stdout_bytes=16 * KiB,
)

ADD = "def add(a, b):\n    return a + b\n"

#: Prepended to hostile sources: ``errno_name(exc)`` so that a job reports *how* an attempt
#: failed (ENOENT: hidden by the mount namespace; EACCES: only a permission check stopped it).
ERRNO_NAME = (
    "import errno as _errno\n"
    "def errno_name(exc):\n"
    "    return _errno.errorcode.get(exc.errno, str(exc.errno))\n"
)


def raw(tensor: torch.Tensor) -> RawTensor:
    tensor = tensor.contiguous()
    data = ctypes.string_at(tensor.data_ptr(), tensor.numel() * tensor.element_size())
    return RawTensor(str(tensor.dtype).removeprefix("torch."), tuple(tensor.shape), data)


def to_tensor(value: RawTensor) -> torch.Tensor:
    dtype = getattr(torch, value.dtype)
    if not value.data:
        return torch.empty(value.shape, dtype=dtype)
    return torch.frombuffer(bytearray(value.data), dtype=dtype).reshape(value.shape)


def add_call(seed: int = 0, label: str = "3x4") -> tuple[Call, torch.Tensor]:
    """An ``add`` call on fresh random inputs and the answer computed here."""
    generator = torch.Generator().manual_seed(seed)
    a, b = (torch.randn(3, 4, generator=generator) for _ in range(2))
    return Call("add", (raw(a), raw(b)), label), a + b


def request(
    source: str,
    calls: tuple[Call, ...] | None = None,
    limits: Limits = FAST,
    **options: object,
) -> SandboxRequest:
    if calls is None:
        calls = (add_call()[0],)
    return SandboxRequest(source, "submission.py", calls, limits, **options)  # type: ignore[arg-type]


def output(result: SandboxResult) -> str:
    """Everything the job could have used to leak text."""
    errors = [call.error for call in result.calls]
    return "\n".join([result.message, result.stdout, result.stderr, *errors])


def reports(stdout: str, marker: str) -> list[str]:
    """What the job printed after ``marker`` on each line that starts with it."""
    prefix = marker + " "
    return [line.removeprefix(prefix) for line in stdout.splitlines() if line.startswith(prefix)]


def processes_of(uid: int) -> list[int]:
    """Live (non-zombie) processes whose real uid is ``uid``, scanned from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
            found.append(int(entry.name))
    return found


def assert_grades_correctly(zygote: Zygote, seed: int = 12345) -> None:
    call, expected = add_call(seed)
    result = zygote.run(request(ADD, (call,)))
    assert result.status == "ok", result
    (only,) = result.calls
    assert only.status == "ok"
    assert only.tensor is not None
    assert torch.equal(to_tensor(only.tensor), expected)


def assert_job_left_nothing(zygote: Zygote) -> None:
    assert zygote.job_uid not in (None, 0, os.getuid())
    # the degraded mode kills asynchronously; a generous bound only costs time on failure
    deadline = time.monotonic() + 5.0
    while (left := processes_of(zygote.job_uid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == []
