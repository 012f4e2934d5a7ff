"""No job can read another's: what job A sent, received, printed or returned is nowhere in the
memory of a later job B on the same zygote, in plain jobs, in speed-trial turns and in a
zygote forked from the grading process (``brrrbot grade``'s fork mode).

Job B searches everything it can read (every readable mapping of its process, every string
the garbage collector reaches, every frame's locals; ``tests.sandbox.memory_scan``) for job
A's marker, function body, printed line, input bytes and returned tensor.  It also searches
for its own marker and its own input, which it must find: that shows the scan reaches the
heap, and data that came through the job's pipes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import torch

from sandbox.api import Call, GiB, Limits, SandboxRequest
from sandbox.client import Zygote
from sandbox.turns import TensorShape, TurnSpec
from tests.sandbox.memory_scan import scan_results, scanner_source
from tests.sandbox.support import raw, to_tensor

LIMITS = Limits(wall_s=120.0, cpu_s=120.0, memory_bytes=4 * GiB)
SIZE = 256


@dataclass(frozen=True)
class JobA:
    """A job whose every trace is random, so that none can occur by chance."""

    marker: str
    body: str
    printed: str
    source: str
    inputs: torch.Tensor
    value: float  # what its function returns, everywhere

    @classmethod
    def new(cls) -> JobA:
        marker, tag = uuid.uuid4().hex, uuid.uuid4().hex
        value = float(torch.tensor(1000 + 1000 * torch.rand(()).item(), dtype=torch.float32))
        printed = f"printed-{tag}"
        body = f"def ident(x):\n    print('{printed}')\n    return torch.full_like(x, {value!r})\n"
        source = f"import torch\nMARKER = 'job-a-{marker}'\n{body}"
        return cls(f"job-a-{marker}", body, printed, source, torch.randn(SIZE), value)

    def needles(self) -> dict[str, bytes]:
        return {
            "marker": self.marker.encode(),
            "body": self.body.encode(),
            "printed": self.printed.encode(),
            "input": raw(self.inputs).data[:128],
            "result": raw(torch.full((64,), self.value)).data,
        }

    def check(self, returned: torch.Tensor) -> None:
        """Job A really ran: its answer came back."""
        assert torch.equal(returned, torch.full((SIZE,), self.value))


def scanner(job_a: JobA) -> tuple[str, torch.Tensor, dict[str, bytes]]:
    """Job B's source, its input, and what it must find of itself."""
    own, own_input = f"job-b-{uuid.uuid4().hex}", torch.randn(SIZE)
    controls = {"own-marker": own.encode(), "own-input": raw(own_input).data[:128]}
    body = f"OWN = '{own}'\ndef ident(x):\n    scan()\n    return x\n"  # with its input at hand
    return scanner_source(job_a.needles() | controls, body), own_input, controls


def assert_nothing_of_a(stdout: str, job_a: JobA, controls: dict[str, bytes]) -> None:
    report = scan_results(stdout)
    memory, objects = report["memory"], report["objects"]
    assert isinstance(memory, dict) and isinstance(objects, dict)
    assert report["scanned"] > 100 << 20  # torch is mapped: the scan read it all
    for name in controls:
        assert memory[name] >= 1, report  # the scan sees the job's own heap and its inputs
    assert objects["own-marker"] >= 1, report
    leaked = {name: (memory[name], objects[name]) for name in job_a.needles()}
    assert leaked == dict.fromkeys(job_a.needles(), (0, 0)), report


def run_a(zygote: Zygote, job_a: JobA) -> None:
    call = Call("ident", (raw(job_a.inputs),))
    result = zygote.run(SandboxRequest(job_a.source, "a.py", (call,), LIMITS))
    assert result.status == "ok", result
    assert job_a.printed in result.stdout
    (only,) = result.calls
    assert only.tensor is not None
    job_a.check(to_tensor(only.tensor))


def run_b(zygote: Zygote, job_a: JobA) -> None:
    source, own_input, controls = scanner(job_a)
    print("ATTACK: job B scans all it can read for job A's code, inputs and results", flush=True)
    result = zygote.run(SandboxRequest(source, "b.py", (Call("ident", (raw(own_input),)),), LIMITS))
    assert result.status == "ok", result
    assert_nothing_of_a(result.stdout, job_a, controls)


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    with Zygote() as started:
        yield started


def test_a_job_finds_nothing_of_an_earlier_job(zygote: Zygote) -> None:
    job_a = JobA.new()
    run_a(zygote, job_a)
    run_b(zygote, job_a)


def _turn(zygote: Zygote, source: str, inputs: torch.Tensor) -> tuple[torch.Tensor, str]:
    shape = TensorShape(str(inputs.dtype).removeprefix("torch."), tuple(inputs.shape))
    spec = TurnSpec(source, "turn.py", "ident", LIMITS, "cpu", (shape,))
    returned = torch.empty_like(inputs)
    with zygote.turn(spec) as turn:
        assert turn.loaded, turn.over
        nbytes = inputs.numel() * inputs.element_size()
        timed = turn.call(((inputs.data_ptr(), nbytes),), shape, (returned.data_ptr(), nbytes), 60)
        assert timed.read, (timed, turn.over)
    over = turn.end()
    assert over.status == "ok", over
    return returned, over.stdout


def test_a_speed_trial_turn_finds_nothing_of_an_earlier_turn(zygote: Zygote) -> None:
    job_a = JobA.new()
    returned, printed = _turn(zygote, job_a.source, job_a.inputs)
    job_a.check(returned)
    assert job_a.printed in printed
    source, own_input, controls = scanner(job_a)
    print("ATTACK: turn B scans all it can read for turn A's code, inputs and results", flush=True)
    returned, printed = _turn(zygote, source, own_input)
    assert torch.equal(returned, own_input)
    assert_nothing_of_a(printed, job_a, controls)


def test_a_job_of_a_forked_zygote_finds_nothing_of_an_earlier_job() -> None:
    with Zygote(fork=True) as forked:  # forked from this process, as `brrrbot grade` does
        job_a = JobA.new()  # made after the fork: only the jobs could carry it across
        run_a(forked, job_a)
        run_b(forked, job_a)


def test_a_forked_zygote_is_replaced_by_exec() -> None:
    """A zygote that dies is started again by exec: a fork now would copy into the new
    zygote what this process has graded since the first fork."""
    with Zygote(fork=True) as forked:
        job_a = JobA.new()
        run_a(forked, job_a)
        assert forked._process is not None
        forked._process.kill()
        forked._process.wait()
        print("ATTACK: job B scans a zygote restarted after job A", flush=True)
        run_b(forked, job_a)
