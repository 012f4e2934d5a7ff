"""What a job is allowed, read from inside the job: its limits, its identity, its
capabilities, its seccomp filters, its CPUs, its environment.

Each job prints one report of what the kernel says about it (``getrlimit``, ``/proc/self/
status``, ``sched_getaffinity``), and the test compares it with what the limits it was given
allow, worked out here.  The escapes the filter exists for are tried from inside a real job,
each after a marker: every denied call fails with the errno the filter returns, and a call
made through another architecture's entry point kills the job.  Fast enough to run against
every mutant of the confinement code (``bench/mutation``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
from typing import Any

import pytest

from sandbox import confine
from sandbox.api import MiB
from sandbox.client import Zygote
from sandbox.turns import TensorShape, TurnSpec
from tests.sandbox.support import ADD, FAST, reports, request

REPORT = f"""
import json, os, resource
limits = {{
    name: resource.getrlimit(getattr(resource, name))
    for name in ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC",
                 "RLIMIT_CORE", "RLIMIT_STACK")
}}
with open("/proc/self/status") as handle:
    status = dict(line.split(":", 1) for line in handle.read().splitlines() if ":" in line)
with open("/proc/self/oom_score_adj") as handle:
    oom = handle.read().strip()
with open("/proc/self/statm") as handle:
    mapped = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
print("REPORT", json.dumps({{
    "limits": limits,
    "status": {{key: value.split() for key, value in status.items()}},
    "oom": oom,
    "mapped": mapped,
    "cpus": sorted(os.sched_getaffinity(0)),
    "cwd": os.getcwd(),
    "env": dict(os.environ),
}}), flush=True)
{ADD}"""

#: every capability cleared, the bounding set included
NO_CAPABILITIES = "0000000000000000"


def report_of(printed: str) -> dict[str, Any]:
    (line,) = reports(printed, "REPORT")
    return json.loads(line)


@pytest.fixture(scope="module")
def graded(zygote: Zygote) -> dict[str, Any]:
    result = zygote.run(request(REPORT))
    assert result.status == "ok", result
    return report_of(result.stdout)


def test_each_limit_is_the_one_the_job_was_given(graded: dict[str, Any]) -> None:
    limits = {name: tuple(pair) for name, pair in graded["limits"].items()}
    cpu = math.ceil(FAST.cpu_s)  # whole seconds; one more before the kill
    assert limits["RLIMIT_CPU"] == (cpu, cpu + 1)
    assert limits["RLIMIT_FSIZE"] == (FAST.file_bytes, FAST.file_bytes)
    assert limits["RLIMIT_NPROC"] == (FAST.processes, FAST.processes)
    assert limits["RLIMIT_NOFILE"] == (256, 256)
    assert limits["RLIMIT_CORE"] == (0, 0)
    assert limits["RLIMIT_STACK"] == (8 * MiB, 8 * MiB)


def test_the_address_space_is_what_was_mapped_plus_the_memory_limit(
    graded: dict[str, Any],
) -> None:
    """The job is allowed what it had mapped when it was confined (torch alone maps hundreds
    of MiB) plus its memory limit: no less than half of what it maps now, no more than all."""
    soft, hard = graded["limits"]["RLIMIT_AS"]
    assert soft == hard
    headroom = hard - FAST.memory_bytes
    assert graded["mapped"] / 2 < headroom <= graded["mapped"], (headroom, graded["mapped"])


def test_the_job_holds_no_privilege(zygote: Zygote, graded: dict[str, Any]) -> None:
    status = graded["status"]
    uid = zygote.job_uid
    assert uid not in (None, 0, os.getuid())
    assert status["Uid"] == [str(uid)] * 4
    assert status["Gid"] == [str(uid)] * 4
    assert status["Groups"] == []
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert status[key] == [NO_CAPABILITIES], key
    assert status["NoNewPrivs"] == ["1"]
    assert status["Seccomp"] == ["2"]  # filter mode
    assert status["Seccomp_filters"] == ["1"]
    assert graded["oom"] == "1000"  # the OOM killer's first choice, never the zygote


def test_the_job_starts_in_its_scratch_with_nothing_of_the_hosts_environment(
    zygote: Zygote, graded: dict[str, Any]
) -> None:
    assert graded["env"] == {
        "HOME": "/scratch",
        "TMPDIR": "/tmp",
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
    expected_cwd = "/" if zygote.mode == "bare" else "/scratch"
    assert graded["cwd"] == expected_cwd


def test_a_graded_job_may_use_every_cpu_of_the_zygote(graded: dict[str, Any]) -> None:
    assert graded["cpus"] == sorted(os.sched_getaffinity(0))


def test_a_timed_job_is_pinned_and_may_start_no_process(zygote: Zygote) -> None:
    """A speed trial's job runs on the highest core this process may use, under a second,
    stacked filter that lets it start threads but no process."""
    shape = TensorShape("float32", (3, 4))
    spec = TurnSpec(REPORT, "turn.py", "add", FAST, "cpu", (shape, shape))
    with zygote.turn(spec) as turn:
        assert turn.loaded, turn.over
    report = report_of(turn.end().stdout)
    assert report["cpus"] == [max(os.sched_getaffinity(0))]
    assert report["status"]["Seccomp_filters"] == ["2"]


ATTEMPTS = """
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
me = os.getpid()
pair = (ctypes.c_int * 2)()

def attempt(name, *args):
    print("ATTEMPT", name, flush=True)
    code = libc.syscall(*map(ctypes.c_long, args))
    if os.getpid() != me:  # a clone let through: the child must not report too
        os._exit(0)
    got = "allowed" if code >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
    print("RESULT", name, got, flush=True)
"""

#: x86_64 numbers, from the kernel's syscall_64.tbl
X86_64 = {
    "ptrace": 101,
    "process_vm_readv": 310,
    "kcmp": 312,
    "io_uring_setup": 425,
    "bpf": 321,
    "userfaultfd": 323,
    "perf_event_open": 298,
    "keyctl": 250,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "unshare": 272,
    "setns": 308,
    "setsid": 112,
    "setpgid": 109,
    "sched_setaffinity": 203,
    "socket": 41,
    "init_module": 175,
    "reboot": 169,
    "move_pages": 279,
    "open_by_handle_at": 304,
}
X32_BIT = 0x40000000
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, SIGCHLD = 0x20000, 0x10000000, 0x40000000, 17
CLONE_THREAD = 0x10000


def x86_64_only() -> None:
    if platform.machine() != "x86_64":
        pytest.skip("the syscall numbers written here are x86_64's")


def test_every_escape_the_filter_names_fails_from_inside_a_job(sandbox: Zygote) -> None:
    x86_64_only()
    calls = [f"attempt({name!r}, {number}, 0, 0, 0, 0, 0)" for name, number in X86_64.items()]
    calls += [
        # the first argument is what decides: the socket family, the clone flags
        "attempt('socketpair_inet', 53, 2, 1, 0, ctypes.addressof(pair))",
        f"attempt('clone_newns', 56, {CLONE_NEWNS | SIGCHLD}, 0, 0, 0, 0)",
        f"attempt('clone_newuser', 56, {CLONE_NEWUSER | SIGCHLD}, 0, 0, 0, 0)",
        f"attempt('clone_newnet', 56, {CLONE_NEWNET | SIGCHLD}, 0, 0, 0, 0)",
        "attempt('clone3', 435, 0, 0)",
        # the same calls by their x32 numbers: the filter must not match on numbers alone
        f"attempt('x32_socket', {X32_BIT | 41}, 2, 1, 0)",
        f"attempt('x32_getpid', {X32_BIT | 39})",
        f"attempt('x32_read', {X32_BIT}, 0, 0, 0)",  # the lowest x32 number
        # just under the x32 range: no such call, so the kernel's ENOSYS, not the filter's
        f"attempt('no_such_call', {X32_BIT - 1})",
        # what a job may still do
        "attempt('socketpair_unix', 53, 1, 1, 0, ctypes.addressof(pair))",
        f"attempt('fork', 56, {SIGCHLD}, 0, 0, 0, 0)",
        "attempt('getpid', 39)",
    ]
    result = sandbox.run(request(ATTEMPTS + "\n".join(calls) + "\n" + ADD))
    assert result.status == "ok", result
    got = dict(line.split(" ", 1) for line in reports(result.stdout, "RESULT"))
    assert reports(result.stdout, "ATTEMPT") == list(got)  # each one ran, and returned
    expected = dict.fromkeys([*X86_64, "socketpair_inet", "clone_newns"], "EPERM")
    expected |= {"clone_newuser": "EPERM", "clone_newnet": "EPERM"}
    expected |= {"clone3": "ENOSYS", "x32_socket": "EPERM", "x32_getpid": "EPERM"}
    expected |= {"x32_read": "EPERM", "no_such_call": "ENOSYS"}
    expected |= {"socketpair_unix": "allowed", "fork": "allowed", "getpid": "allowed"}
    assert got == expected


def test_a_timed_job_may_start_threads_and_no_process(zygote: Zygote) -> None:
    x86_64_only()
    source = ATTEMPTS + (
        f"attempt('fork', 57)\nattempt('vfork', 58)\n"
        f"attempt('clone_process', 56, {SIGCHLD}, 0, 0, 0, 0)\n"
        "import threading\n"
        "thread = threading.Thread(target=lambda: print('THREAD ran', flush=True))\n"
        "thread.start()\nthread.join()\n" + ADD
    )
    shape = TensorShape("float32", (3, 4))
    with zygote.turn(TurnSpec(source, "turn.py", "add", FAST, "cpu", (shape, shape))) as turn:
        assert turn.loaded, turn.over
    printed = turn.end().stdout
    got = dict(line.split(" ", 1) for line in reports(printed, "RESULT"))
    assert got == {"fork": "EPERM", "vfork": "EPERM", "clone_process": "EPERM"}
    assert reports(printed, "THREAD") == ["ran"]


#: ``mov eax, 20; int 0x80; ret``: getpid through the 32-bit entry point, which a filter
#: that checks only numbers would read as x86_64's call 20 (writev) and let through
INT80_GETPID = """
import ctypes, mmap
code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
address = ctypes.addressof(ctypes.c_char.from_buffer(page))
call = ctypes.CFUNCTYPE(ctypes.c_int)(address)
print("ATTEMPT int80", flush=True)
print("RESULT int80", call(), flush=True)
"""


def test_a_call_through_another_architectures_entry_point_kills_the_job(
    sandbox: Zygote,
) -> None:
    x86_64_only()
    # outside any filter first: where the kernel has no 32-bit entry point, there is none to
    # guard (the call dies of SIGSEGV instead)
    plain = subprocess.run([sys.executable, "-c", INT80_GETPID], capture_output=True, text=True)
    if plain.returncode == -signal.SIGSEGV:
        pytest.skip("this kernel has no 32-bit entry point (no IA32 emulation)")
    (pid,) = reports(plain.stdout, "RESULT")
    assert plain.returncode == 0 and int(pid.removeprefix("int80 ")) > 0, plain
    result = sandbox.run(request(INT80_GETPID + ADD))
    assert reports(result.stdout, "ATTEMPT") == ["int80"]
    assert reports(result.stdout, "RESULT") == []
    assert (result.status, result.message) == ("crashed", "crashed with SIGSYS during import")


WITHOUT_SETPCAP_REPORT = f"""
from sandbox.client import Zygote
from sandbox.api import Limits, MiB, SandboxRequest
limits = Limits(wall_s=5.0, cpu_s=2.0, memory_bytes=512 * MiB)
with Zygote(modes=("bare",)) as zygote:
    result = zygote.run(SandboxRequest({REPORT!r}, "submission.py", (), limits))
    print("MODE", zygote.mode, flush=True)
    print("RESULT", result.status, result.message, flush=True)
    print(result.stdout, flush=True)
"""


def test_a_worker_that_cannot_empty_the_bounding_set_still_confines_its_jobs() -> None:
    """A worker started without CAP_SETPCAP (a container that took it away) cannot drop
    capabilities from the bounding set: each drop is refused, and that is no failure. Its
    job still ends up with no capability, under its limits and filter."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.getuid() != 0:
        pytest.skip("needs root and util-linux's setpriv to start a worker without CAP_SETPCAP")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    run = subprocess.run(
        [setpriv, "--bounding-set=-setpcap", sys.executable, "-c", WITHOUT_SETPCAP_REPORT],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert reports(run.stdout, "MODE") == ["bare"]
    assert reports(run.stdout, "RESULT") == ["ok ok"], run.stdout
    status = report_of(run.stdout)["status"]
    assert status["Uid"][0] != "0"
    for key in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert status[key] == [NO_CAPABILITIES], key
    setpcap = 1 << 8  # CAP_SETPCAP, still outside the bounding set it was never in
    assert int(status["CapBnd"][0], 16) & setpcap == 0
    assert status["NoNewPrivs"] == ["1"] and status["Seccomp"] == ["2"]


def test_a_limit_is_lowered_never_raised_past_the_hard_one() -> None:
    """In a child: with FSIZE at soft 512 KiB under a hard 2 MiB, a job's 1 MiB is granted
    in full (the soft limit may rise to the hard one); under a hard 768 KiB it gets 768 KiB."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            got = []
            for hard in (2 * MiB, 768 * 1024):
                resource.setrlimit(resource.RLIMIT_FSIZE, (512 * 1024, hard))
                confine._lower(resource.RLIMIT_FSIZE, MiB, MiB)
                got.append(resource.getrlimit(resource.RLIMIT_FSIZE))
            os.write(write, json.dumps(got).encode())
        finally:
            os._exit(0)
    os.close(write)
    data = os.read(read, 4096)
    os.close(read)
    os.waitpid(pid, 0)
    assert json.loads(data) == [[MiB, MiB], [768 * 1024, 768 * 1024]]


def test_a_job_given_under_a_second_of_cpu_gets_one(zygote: Zygote) -> None:
    """RLIMIT_CPU counts whole seconds: 0.3 s becomes 1, and the kill comes a second later."""
    result = zygote.run(request(REPORT, limits=dataclasses.replace(FAST, cpu_s=0.3)))
    assert result.status == "ok", result
    assert tuple(report_of(result.stdout)["limits"]["RLIMIT_CPU"]) == (1, 2)


def test_a_job_that_cannot_be_confined_never_runs_and_the_sandbox_says_why(
    sandbox: Zygote,
) -> None:
    """A CPU limit no kernel can hold fails the job's confinement: the job never runs the
    submission, the sandbox reports its own failure naming the stage, and grades on."""
    source = "print('RAN', flush=True)\n" + ADD
    result = sandbox.run(request(source, limits=dataclasses.replace(FAST, cpu_s=1e30)))
    assert (result.status, result.message) == (
        "internal_error",
        "sandbox setup failed: confine: Python int too large to convert to C long",
    )
    assert "RAN" not in result.stdout
