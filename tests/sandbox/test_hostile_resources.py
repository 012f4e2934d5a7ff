"""Hostile submissions that try to exhaust the host: processes, memory, CPU, time, output.

Besides the verdict, each test checks that the job reached its attack and that
the limit bit at the right place: the job was stopped early, nothing of it
survives (the ``sandbox`` fixture scans /proc), and the host's own files and
processes are untouched.

CPU limits are checked on the job's CPU time (``cpu_s``, from its init's wait4),
which a busy machine does not stretch.  Wall times are taken by the zygote when
its deadline poll returns; their upper bounds allow ``LATE_S`` for a zygote
scheduled late on a loaded two-core machine, far below the limit being tested.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
import uuid
from pathlib import Path

import torch

from sandbox.api import MiB
from sandbox.client import Zygote
from sandbox.supervise import REAP_S
from sandbox.turns import TensorShape, TurnSpec
from tests.sandbox.support import ADD, FAST, add_call, reports, request, to_tensor

LATE_S = 1.0
# The kernel enforces RLIMIT_CPU on CPU time sampled at each scheduler tick (4 ms here), while
# ``cpu_s`` is the scheduler's exact runtime: on a busy machine the job is charged whole ticks
# it only partly used, so it can be stopped with a few percent less runtime than its limit.
CPU_SLACK = 0.75


def test_bounded_fork_bomb_is_capped_and_reaped(sandbox: Zygote) -> None:
    source = """
import os, time
def add(a, b):
    children = 0
    for _ in range(500):
        try:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            children += 1
        except OSError:
            break
    print("forked", children)
    return a + b
"""
    limits = dataclasses.replace(FAST, processes=16)
    result = sandbox.run(request(source, limits=limits))
    assert result.status == "ok"
    forked = int(result.stdout.split()[-1])
    assert 0 < forked < limits.processes  # the sixteen-process budget held


def test_unbounded_fork_bomb_ends_at_the_wall_limit(sandbox: Zygote) -> None:
    source = """
import errno, os, time
print("ATTEMPT fork bomb", flush=True)
refused = False
while True:
    try:
        os.fork()
    except OSError as exc:
        if not refused:  # once per process: enough to show the process limit bit
            refused = True
            print("fork refused", errno.errorcode[exc.errno], flush=True)
        time.sleep(0.01)
"""
    limits = dataclasses.replace(FAST, wall_s=1.5, processes=24)
    result = sandbox.run(request(source, limits=limits))
    assert (result.status, result.message) == ("timeout", "time limit 1.5 s exceeded")
    assert reports(result.stdout, "ATTEMPT") == ["fork bomb"]
    assert "EAGAIN" in reports(result.stdout, "fork refused")  # the process cap held it
    assert limits.wall_s <= result.wall_s < limits.wall_s + LATE_S


def test_memory_bomb_of_python_objects(sandbox: Zygote) -> None:
    source = (
        """
blocks = []
while True:
    blocks.append(b"x" * (16 << 20))
"""
        + ADD
    )
    limits = dataclasses.replace(FAST, memory_bytes=256 * MiB)
    result = sandbox.run(request(source, limits=limits))
    assert result.status == "memory"
    assert result.message == "memory limit 256 MiB exceeded"


def test_memory_bomb_of_tensors(sandbox: Zygote) -> None:
    source = """
import torch
def add(a, b):
    keep = [torch.ones(1 << 26) for _ in range(64)]  # 16 GiB if nothing stopped it
    return a + b
"""
    limits = dataclasses.replace(FAST, memory_bytes=256 * MiB)
    result = sandbox.run(request(source, limits=limits))
    assert result.status == "memory"
    assert result.calls[0].tensor is None


def test_memory_bomb_in_tmpfs_is_charged_to_the_job(sandbox: Zygote) -> None:
    before = shutil.disk_usage("/dev/shm").used
    source = (
        """
chunk = b"x" * (8 << 20)
for i in range(64):
    with open(f"/dev/shm/fill{i}", "wb") as handle:
        handle.write(chunk)
"""
        + ADD
    )
    limits = dataclasses.replace(
        FAST, memory_bytes=128 * MiB, scratch_bytes=1024 * MiB, file_bytes=16 * MiB
    )
    result = sandbox.run(request(source, limits=limits))
    assert result.status == "memory"  # the cgroup, not the rlimits, stopped it
    assert shutil.disk_usage("/dev/shm").used - before < 64 * MiB  # the host's shm got nothing


def test_cpu_loop_hits_the_cpu_limit_before_the_wall(sandbox: Zygote) -> None:
    # a wall limit that even a tenth of a core reaches only after the CPU limit
    limits = dataclasses.replace(FAST, cpu_s=1.0, wall_s=15.0)
    source = "print('ATTEMPT loop', flush=True)\nwhile True:\n    pass\n"
    result = sandbox.run(request(source, limits=limits))
    assert (result.status, result.message) == ("timeout", "CPU time limit 1 s exceeded")
    assert reports(result.stdout, "ATTEMPT") == ["loop"]
    assert CPU_SLACK * limits.cpu_s <= result.cpu_s < limits.cpu_s + 0.5  # SIGXCPU at 1 s
    assert result.wall_s < limits.wall_s


def test_ignoring_sigxcpu_still_ends_at_the_hard_cpu_limit(sandbox: Zygote) -> None:
    source = """
import resource, signal
signal.signal(signal.SIGXCPU, signal.SIG_IGN)
print("ATTEMPT ignoring SIGXCPU", flush=True)
try:
    resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    print("raised the limit", flush=True)
except ValueError as exc:
    print("raise refused", exc, flush=True)
while True:
    pass
"""
    limits = dataclasses.replace(FAST, cpu_s=1.0, wall_s=15.0)
    result = sandbox.run(request(source, limits=limits))
    assert (result.status, result.message) == ("timeout", "CPU time limit 1 s exceeded")
    assert reports(result.stdout, "ATTEMPT") == ["ignoring SIGXCPU"]
    assert reports(result.stdout, "raise refused") == ["not allowed to raise maximum limit"]
    # it ran on past the 1 s soft limit, SIGXCPU ignored, until the SIGKILL at the 2 s hard
    # limit (soft + 1 s, confine.set_limits) ended it
    hard = limits.cpu_s + 1
    assert (limits.cpu_s + hard) / 2 < result.cpu_s < hard + 0.5
    assert result.wall_s < limits.wall_s


def test_a_timed_job_sees_one_core_and_cannot_widen_it(sandbox: Zygote) -> None:
    """A speed trial's job is pinned before its code runs, to the highest core this process
    may use (where the learner and the reference take turns), and may not leave it."""
    source = """
import os
print("AFFINITY", *sorted(os.sched_getaffinity(0)), flush=True)
try:
    os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
except OSError as exc:
    print("widen refused", type(exc).__name__, flush=True)
print("AFFINITY", *sorted(os.sched_getaffinity(0)), flush=True)
def add(a, b):
    return a + b
"""
    shape = TensorShape("float32", (3, 4))
    with sandbox.turn(TurnSpec(source, "turn.py", "add", FAST, "cpu", (shape, shape))) as turn:
        assert turn.loaded, turn.over
    printed = turn.end().stdout
    core = str(max(os.sched_getaffinity(0)))
    assert reports(printed, "AFFINITY") == [core, core], printed
    assert reports(printed, "widen refused") == ["PermissionError"]


def test_sleeping_forever_hits_the_wall_limit(sandbox: Zygote) -> None:
    limits = dataclasses.replace(FAST, wall_s=1.0)
    source = "import time\ndef add(a, b):\n    print('ATTEMPT sleep', flush=True)\n"
    source += "    time.sleep(3600)\n"
    result = sandbox.run(request(source, limits=limits))
    assert (result.status, result.message) == ("timeout", "time limit 1 s exceeded")
    assert reports(result.stdout, "ATTEMPT") == ["sleep"]
    assert limits.wall_s <= result.wall_s < limits.wall_s + LATE_S
    assert result.calls[0].status == "skipped"


def test_ignoring_sigterm_does_not_matter(sandbox: Zygote) -> None:
    source = """
import signal, time
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
print("ATTEMPT ignoring", flush=True)
time.sleep(3600)
"""
    limits = dataclasses.replace(FAST, wall_s=1.0)
    started = time.monotonic()
    result = sandbox.run(request(source, limits=limits))
    elapsed = time.monotonic() - started
    assert (result.status, result.message) == ("timeout", "time limit 1 s exceeded")
    assert reports(result.stdout, "ATTEMPT") == ["ignoring"]
    assert limits.wall_s <= result.wall_s < limits.wall_s + LATE_S
    # the kill is SIGKILL, with no grace period to wait out: the whole run, teardown and
    # reply included, ends well before a stuck job's reap timeout (supervise.REAP_S)
    assert elapsed < limits.wall_s + REAP_S


def test_output_flood_is_cut_at_the_cap(sandbox: Zygote) -> None:
    source = (
        "import sys\nwhile True:\n    print('x' * 1000)\n    print('y' * 1000, file=sys.stderr)\n"
    )
    result = sandbox.run(request(source))
    assert result.status == "output_limit"
    assert len(result.stdout) <= FAST.stdout_bytes
    assert len(result.stderr) <= FAST.stdout_bytes
    # the stream that overflowed was kept up to the cap, exactly
    overflowed = result.message.rsplit(" ", 1)[-1]
    assert overflowed in ("stdout", "stderr")
    assert len(getattr(result, overflowed)) == FAST.stdout_bytes
    assert result.wall_s < FAST.wall_s  # the cap ended it, not the wall limit


def test_enormous_output_tensor_is_refused_before_it_is_read(sandbox: Zygote) -> None:
    source = "import torch\ndef add(a, b):\n    return torch.ones(4 << 20)\n"  # 16 MiB of float32
    result = sandbox.run(request(source))
    assert (result.status, result.message) == (
        "output_limit",
        "output limit exceeded: tensors over 4 MiB",
    )
    assert result.calls[0].tensor is None


def test_thousands_of_threads_fail_to_start(sandbox: Zygote) -> None:
    source = """
import threading, time
def add(a, b):
    for _ in range(5000):
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
    return a + b
"""
    result = sandbox.run(request(source))
    assert result.status == "ok"
    (call,) = result.calls
    assert call.status == "raised"
    assert "can't start new thread" in call.error


def test_deep_recursion_is_contained(sandbox: Zygote) -> None:
    source = """
import sys
sys.setrecursionlimit(10 ** 7)
def add(a, b):
    global depth
    depth += 1
    if depth == 1:
        print("ATTEMPT recursion", flush=True)
    return add(a, b) + 1
depth = 0
"""
    limits = dataclasses.replace(FAST, memory_bytes=256 * MiB)
    result = sandbox.run(request(source, limits=limits))
    assert result.status in ("memory", "crashed"), result
    assert reports(result.stdout, "ATTEMPT") == ["recursion"]


def test_scratch_space_is_capped_and_host_tmp_untouched(sandbox: Zygote) -> None:
    name = f"brrrbot-fill-{uuid.uuid4().hex}"
    source = f"""
import os
written = 0
try:
    for i in range(64):
        with open(f"/tmp/{name}-{{i}}", "wb") as handle:
            handle.write(b"x" * (512 << 10))
        written += 1
except OSError as exc:
    print("stopped", exc.errno)
print("files", written)
{ADD}"""
    limits = dataclasses.replace(FAST, scratch_bytes=4 * MiB)
    result = sandbox.run(request(source, limits=limits))
    assert reports(result.stdout, "stopped") == ["28"]  # ENOSPC at the 4 MiB tmpfs
    (files,) = reports(result.stdout, "files")
    assert int(files) == 8  # 4 MiB of 512 KiB files fitted, not one byte more
    assert not list(Path("/tmp").glob(f"{name}-*"))


def test_many_calls_respect_the_shared_output_budget(sandbox: Zygote) -> None:
    calls = tuple(add_call(seed, label=f"call {seed}")[0] for seed in range(8))
    source = "import torch\ndef add(a, b):\n    return torch.zeros(96 << 10)\n"  # 384 KiB each
    limits = dataclasses.replace(FAST, output_bytes=1 * MiB)
    result = sandbox.run(request(source, calls, limits=limits))
    assert result.status == "output_limit"
    returned = [c for c in result.calls if c.tensor is not None]
    assert len(returned) == 2
    assert all(
        torch.equal(to_tensor(c.tensor), torch.zeros(96 << 10)) for c in returned if c.tensor
    )
    assert sum(c.tensor.nbytes for c in returned if c.tensor) <= limits.output_bytes
