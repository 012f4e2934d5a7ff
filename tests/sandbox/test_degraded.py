"""Where namespaces are missing: the degraded "bare" mode, an unprivileged worker, the report."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.sandbox import isolation
from bot.sandbox.client import PROJECT_ROOT, Zygote
from tests.sandbox.support import (
    ADD,
    FAST,
    assert_grades_correctly,
    assert_job_left_nothing,
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
    source = f"""
import os, time
for _ in range(3):
    if os.fork() == 0:
        try:
            os.setsid()
        except OSError:
            pass
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
            try:
                open({str(heartbeat)!r}, "a").write("x")
            except OSError:
                pass
time.sleep(0.3)
{ADD}"""
    result = bare.run(request(source, limits=dataclasses.replace(FAST, processes=24)))
    assert result.status == "ok"
    assert_job_left_nothing(bare)
    assert not heartbeat.exists()  # the job's uid cannot write into a root-owned directory
    assert_grades_correctly(bare)


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
        script = f"""
import json, sys
sys.path.insert(0, {PROJECT_ROOT!r})
from bot.sandbox.client import Zygote
from bot.sandbox.isolation import minimum_ok
from tests.sandbox.support import ADD, request
with Zygote(python=sys.executable) as zygote:
    layers = zygote.isolation_report()
    leak = zygote.run(request("print(open({str(secret)!r}).read())\\n" + ADD))
    good = zygote.run(request(ADD))
    print(json.dumps({{
        "mode": zygote.mode, "minimum": minimum_ok(layers),
        "active": {{layer.name: layer.active for layer in layers}},
        "leak": leak.stdout + leak.message, "good": good.status,
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
    if report["mode"] == "user-namespaces":
        assert report["minimum"]
        assert (
            report["active"]["PID namespace"]
            and report["active"]["mount namespace, read-only root"]
        )
    else:  # bare as an unprivileged user: the job would share the worker's uid
        assert report["mode"] == "bare" and not report["active"]["PID namespace"]
        assert not report["active"]["worker out of the job's reach"]
        assert not report["minimum"]
