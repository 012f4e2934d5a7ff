"""Where namespaces are missing: the degraded "bare" mode, an unprivileged worker, the report."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import isolation
from sandbox.channel import JobChannel
from sandbox.client import PROJECT_ROOT, Zygote
from sandbox.codec import JobKind, JobOrder, encode_request
from sandbox.framing import frame_chunks
from sandbox.transcript import Transcript
from tests.sandbox.support import (
    ADD,
    ERRNO_NAME,
    FAST,
    assert_grades_correctly,
    assert_job_left_nothing,
    processes_of,
    reports,
    request,
)

SYSTEM_PYTHON = "/usr/bin/python3.11"


@pytest.fixture(scope="module")
def bare() -> Iterator[Zygote]:
    with Zygote(modes=("bare",)) as started:
        yield started


def test_bare_mode_report_is_honest(bare: Zygote) -> None:
    layers = {layer.name: layer for layer in bare.isolation_report()}
    for name in ("network namespace", "PID namespace", "mount namespace, read-only root"):
        assert not layers[name].active
    assert layers["no network"].active and layers["seccomp filter"].active
    assert isolation.minimum_ok(list(layers.values()))


def test_bare_mode_still_kills_daemons_and_fork_bombs(bare: Zygote, tmp_path: Path) -> None:
    heartbeat = tmp_path / "heartbeat"
    source = (
        ERRNO_NAME
        + f"""
import os, time
news, tell = os.pipe()
go, start = os.pipe()
print("ATTEMPT daemons", flush=True)
for _ in range(3):
    if os.fork() == 0:
        os.close(start)
        try:
            os.setsid()
        except OSError:
            pass
        try:
            open({str(heartbeat)!r}, "a").write("x")
            print("heartbeat written", flush=True)
        except OSError as exc:
            print("heartbeat denied", errno_name(exc), flush=True)
        os.write(tell, b"u")
        os.read(go, 1)  # until the job closes ``start``: all three daemons exist
        full = False
        while True:
            try:
                os.fork()
            except OSError:
                if not full:
                    full = True
                    os.write(tell, b"f")
                time.sleep(0.01)
os.close(start)
seen = b""
while seen.count(b"u") < 3 or b"f" not in seen:
    seen += os.read(news, 64)
print("daemons up", seen.count(b"u"), "and the process limit reached", flush=True)
{ADD}"""
    )
    result = bare.run(request(source, limits=dataclasses.replace(FAST, processes=24)))
    assert result.status == "ok", result
    assert reports(result.stdout, "ATTEMPT") == ["daemons"]
    assert reports(result.stdout, "daemons up") == ["3 and the process limit reached"]
    # no namespaces here: only the job's own uid keeps it out of a root-owned directory
    assert reports(result.stdout, "heartbeat denied") == ["EACCES"] * 3
    assert not heartbeat.exists()
    assert_job_left_nothing(bare)  # the daemons and their fork bombs are all gone
    assert_grades_correctly(bare)


HONEST = "import torch\ndef softmax(x):\n    return torch.softmax(x, dim=-1)\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to an unprivileged user")
@pytest.mark.skipif(not os.path.exists(SYSTEM_PYTHON), reason="needs a world-readable Python")
def test_unprivileged_worker_gets_user_namespaces_or_an_honest_report() -> None:
    """Run a Zygote as ``nobody``; torch comes from this venv through a .pth file."""
    import torch

    home = Path(tempfile.mkdtemp(prefix="brrrbot-unpriv-"))
    try:
        home.chmod(0o755)
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(home)], check=True)
        site = next(home.glob("lib/python3*/site-packages"))
        (site / "torch-path.pth").write_text(str(Path(torch.__file__).parents[1]) + "\n")
        secret = home / "secret"
        secret.write_text("ROOT-ONLY-SECRET")
        secret.chmod(0o600)
        attempt = f"""
print("ATTEMPT read", flush=True)
try:
    print(open({str(secret)!r}).read())
except OSError as exc:
    print("denied", errno_name(exc))
"""
        script = f"""
import json, sys
sys.path.insert(0, {PROJECT_ROOT!r})
from sandbox.client import Zygote
from sandbox.isolation import minimum_ok
from tests.sandbox.support import ADD, ERRNO_NAME, request
from bot.jobs.job_spec import SpeedSpec
from bot.worker.speed_trial import run_trial
from graders.registry import registry
with Zygote(python=sys.executable) as zygote:
    layers = zygote.isolation_report()
    leak = zygote.run(request(ERRNO_NAME + {attempt!r} + ADD))
    good = zygote.run(request(ADD))
    trial = run_trial(SpeedSpec("softmax", "softmax_rows"), {HONEST!r}, "h.py", zygote,
                      registry()["stable_softmax"].limits, pairs=4)
    print(json.dumps({{
        "mode": zygote.mode, "minimum": minimum_ok(layers),
        "active": {{layer.name: layer.active for layer in layers}},
        "leak": leak.stdout + leak.message, "good": good.status,
        "trial": "ranked" if trial.result is not None else trial.reason,
    }}))
"""
        completed = subprocess.run(
            [str(home / "bin/python"), "-c", script],
            user=65534,
            group=65534,
            extra_groups=[],
            cwd="/",
            env={},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        report = json.loads(completed.stdout.splitlines()[-1])
    finally:
        shutil.rmtree(home)
    assert report["good"] == "ok"
    assert "ROOT-ONLY-SECRET" not in report["leak"]
    # the job tried: EACCES where the file is visible but not its own, ENOENT where hidden
    assert reports(report["leak"], "ATTEMPT") == ["read"]
    assert reports(report["leak"], "denied")[0] in ("EACCES", "ENOENT")
    if report["mode"] == "user-namespaces":
        # the unprivileged worker holds its speed trial's jobs: stops them, reads their memory
        assert report["trial"] == "ranked"
        assert report["minimum"]
        assert (
            report["active"]["PID namespace"]
            and report["active"]["mount namespace, read-only root"]
        )
    else:  # bare as an unprivileged user: the job would share the worker's uid
        assert report["mode"] == "bare" and not report["active"]["PID namespace"]
        assert not report["active"]["worker out of the job's reach"]
        assert not report["minimum"]


def test_a_job_dies_with_a_control_channel_that_breaks_mid_job() -> None:
    """In the bare mode no PID namespace takes a job down with its zygote: when the zygote's
    watch breaks mid-job (here a garbled order from its client), it kills the job first."""
    with Zygote(modes=("bare",)) as zygote:
        uid = zygote.job_uid
        assert zygote._control is not None
        control = zygote._control
        sleeper = "import time\nprint('asleep', flush=True)\ntime.sleep(60)\n" + ADD
        limits = dataclasses.replace(FAST, wall_s=60.0, cpu_s=60.0)
        order = JobOrder(JobKind.CALLS, limits, "cpu", pinned=False)
        channel = JobChannel(control, order, Transcript(request(sleeper), order.limits))
        channel.send(frame_chunks(*encode_request(request(sleeper))))
        channel.end_feed()
        deadline = time.monotonic() + 30
        while b"asleep" not in channel.streams.facts.stdout:
            assert time.monotonic() < deadline, "the job never started"
            channel.poller.pump(0.5)
        assert uid is not None and processes_of(uid)  # the job is alive
        print("ATTACK: a garbled control frame while the job sleeps", flush=True)
        control.sock.sendall(b"EVIL" + b"\0" * 12)
        channel.close()
        assert zygote._process is not None
        zygote._process.wait(30)  # the zygote gives up on its client...
        assert_job_left_nothing(zygote)  # ...and the job is gone with it
