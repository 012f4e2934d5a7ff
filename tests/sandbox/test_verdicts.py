"""How observations become verdicts, and how the isolation report judges a probe."""

from __future__ import annotations

import copy
import signal
from typing import Any

import pytest

from sandbox.api import CallResult, GiB, KiB, Limits, MiB
from sandbox.isolation import build_layers, format_report, minimum_ok
from sandbox.observation import ExitRecord, Observation
from sandbox.transcript import Transcript
from sandbox.units import format_bytes, format_seconds
from sandbox.verdict import decide, status_of
from tests.sandbox.support import add_call, request

LIMITS = Limits(wall_s=10.0, cpu_s=1.5)
JOB = request("", (add_call(0, "first")[0], add_call(1, "second")[0]), limits=LIMITS)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2 * GiB, "2 GiB"),
        (64 * MiB, "64 MiB"),
        (1536 * MiB, "1.5 GiB"),
        (100 * KiB, "100 KiB"),
        (7, "7 B"),
    ],
)
def test_bytes_read_like_a_person_wrote_them(value: int, text: str) -> None:
    assert format_bytes(value) == text


def test_seconds_drop_needless_decimals() -> None:
    assert [format_seconds(s) for s in (10.0, 1.5, 0.25)] == ["10 s", "1.5 s", "0.25 s"]


def _loaded(calls_done: int = 0) -> Transcript:
    transcript = Transcript(JOB, LIMITS)
    transcript.loaded = True
    transcript.calls = [CallResult(c.function, c.label, "ok") for c in JOB.calls[:calls_done]]
    return transcript


def _died(exited: bool, value: int, cpu_s: float = 0.1) -> Observation:
    return Observation(exit=ExitRecord(exited, value, cpu_s))


CASES = [
    (_died(False, signal.SIGXCPU), _loaded(), ("timeout", "CPU time limit 1.5 s exceeded")),
    (_died(False, signal.SIGKILL, 2.6), _loaded(), ("timeout", "CPU time limit 1.5 s exceeded")),
    (Observation(timed_out=True), _loaded(), ("timeout", "time limit 10 s exceeded")),
    (
        Observation(oom=True, exit=ExitRecord(False, signal.SIGKILL, 0.1)),
        _loaded(),
        ("memory", "memory limit 2 GiB exceeded"),
    ),
    (
        _died(False, signal.SIGSEGV),
        _loaded(1),
        ("crashed", "crashed with SIGSEGV during call add (second)"),
    ),
    (_died(True, 0), Transcript(JOB, LIMITS), ("exited", "exited with code 0 during import")),
    (
        Observation(exit=ExitRecord(True, 1, 0.1), pids_exhausted=True),
        _loaded(),
        ("exited", "exited with code 1 during call add (first) (process limit 64 reached)"),
    ),
    (
        Observation(over="stdout"),
        _loaded(),
        ("output_limit", "output limit exceeded: more than 64 KiB printed to stdout"),
    ),
    (
        Observation(setup_error="mount: EPERM"),
        _loaded(),
        ("internal_error", "sandbox setup failed: mount: EPERM"),
    ),
    (Observation(), _loaded(), ("internal_error", "the sandbox lost track of the job")),
]


@pytest.mark.parametrize(("obs", "transcript", "expected"), CASES)
def test_status_names_the_limit_that_ended_the_job(
    obs: Observation, transcript: Transcript, expected: tuple[str, str]
) -> None:
    assert status_of(JOB, obs, transcript) == expected


def test_calls_that_never_ran_are_skipped_and_the_first_says_why() -> None:
    result = decide(JOB, "cpu", _died(False, signal.SIGSEGV), _loaded())
    assert [c.status for c in result.calls] == ["skipped", "skipped"]
    assert [c.error for c in result.calls] == [result.message, ""]


def test_the_result_carries_the_cpu_time_the_init_reported() -> None:
    assert decide(JOB, "cpu", _died(False, signal.SIGKILL, 2.6), _loaded()).cpu_s == 2.6
    killed_at_the_wall = decide(JOB, "cpu", Observation(timed_out=True, wall_s=10.2), _loaded())
    assert (killed_at_the_wall.wall_s, killed_at_the_wall.cpu_s) == (10.2, 0.0)


def _ready() -> dict[str, Any]:
    writable = ["/tmp", "/dev/shm", "/scratch"]
    return {
        "pid": 10,
        "mode": "namespaces",
        "mode_notes": [],
        "cuda": False,
        "job_uid": 1500000010,
        "zygote_uid": 0,
        "cgroups": {"memory": "cgroup v1 at /x", "pids": "cgroup v1 at /y"},
        "cgroup_versions": {"memory": 1, "pids": 1},
        "zygote_namespaces": {n: f"{n}:[1]" for n in ("net", "pid", "mnt", "ipc", "uts")},
        "probe": {
            "pid": 2,
            "namespaces": {n: f"{n}:[2]" for n in ("net", "pid", "mnt", "ipc", "uts")},
            "status": {"NoNewPrivs": "1", "Seccomp": "2", "CapEff": "0", "CapBnd": "0"},
            "rlimits": {n: [5, 5] for n in ("AS", "CPU", "FSIZE", "NOFILE", "NPROC", "STACK")}
            | {"CORE": [0, 0]},
            "socket": "EPERM",
            "writes": {"/": "EROFS", "/usr": "EROFS"} | dict.fromkeys(writable, "ok"),
            "visible": {"/srv/bot": False},
            "mounts": [["/", "tmpfs", "ro"], ["/proc", "proc", "rw"]]
            + [[p, "tmpfs", "rw"] for p in writable],
            "cwd": "/scratch",
        },
    }


def test_a_fully_confined_probe_activates_every_layer() -> None:
    layers = build_layers(_ready())
    assert [layer.name for layer in layers if not layer.active] == []
    assert minimum_ok(layers)
    assert format_report(layers).endswith("minimum isolation (required layers): OK")


@pytest.mark.parametrize(
    ("path", "value", "layer"),
    [
        (("probe", "visible", "/srv/bot"), True, "mount namespace, read-only root"),
        (("probe", "writes", "/usr"), "ok", "mount namespace, read-only root"),
        (("probe", "status", "Seccomp"), "0", "seccomp filter"),
        (("probe", "pid"), 7, "PID namespace"),
        (("job_uid",), 0, "unprivileged uid"),
    ],
)
def test_one_weak_observation_turns_its_layer_off(
    path: tuple[str, ...], value: object, layer: str
) -> None:
    ready = copy.deepcopy(_ready())
    target = ready
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    inactive = [item.name for item in build_layers(ready) if not item.active]
    assert inactive == [layer]


def test_same_uid_without_namespaces_breaks_the_minimum() -> None:
    """Bare mode as an unprivileged worker: the job would share the worker's uid."""
    ready = copy.deepcopy(_ready())
    ready["job_uid"] = ready["zygote_uid"] = 10001
    layers = {layer.name: layer for layer in build_layers(ready)}
    assert layers["worker out of the job's reach"].active  # user namespaces: PID + mount hide
    ready["probe"]["pid"] = 7  # no PID namespace: the worker's /proc entries are visible
    layers = {layer.name: layer for layer in build_layers(ready)}
    assert not layers["worker out of the job's reach"].active
    assert "could read the worker's environment" in layers["worker out of the job's reach"].detail
    assert not minimum_ok(list(layers.values()))


def test_reachable_network_breaks_the_minimum() -> None:
    ready = copy.deepcopy(_ready())
    ready["probe"]["socket"] = "ok"
    ready["probe"]["namespaces"]["net"] = ready["zygote_namespaces"]["net"]
    layers = build_layers(ready)
    assert not minimum_ok(layers)
    assert format_report(layers).endswith("NOT MET")
