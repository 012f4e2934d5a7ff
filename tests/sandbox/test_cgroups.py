"""Cgroup detection and the zygote's cgroup, on fake v1 and v2 trees and on this machine."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sandbox import cgroups
from sandbox.api import Limits, MiB
from sandbox.client import Zygote
from tests.sandbox.support import ADD, request

LIMITS = Limits(memory_bytes=256 * MiB, output_bytes=16 * MiB, processes=10)


def _fake_proc(tmp_path: Path, cgroup: str, mounts: list[tuple[str, str, str, str]]) -> str:
    """A fake /proc/self with ``cgroup`` and a mountinfo of (root, point, fstype, options)."""
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    lines = [
        f"{i} 1 0:{i} {root} {point} rw - {fstype} {fstype} {options}"
        for i, (root, point, fstype, options) in enumerate(mounts)
    ]
    (proc / "mountinfo").write_text("\n".join(lines) + "\n")
    return str(proc)


def test_v1_limits_are_tightened_around_a_job_and_lifted_after(tmp_path: Path) -> None:
    memory, pids = tmp_path / "memory", tmp_path / "pids"
    (memory / "worker").mkdir(parents=True)
    pids.mkdir()
    proc = _fake_proc(
        tmp_path,
        "9:pids:/\n4:memory:/worker\n0::/\n",
        [
            ("/", str(memory), "cgroup", "rw,memory"),
            ("/", str(pids), "cgroup", "rw,pids"),
            ("/", str(tmp_path / "unified"), "cgroup2", "rw"),
        ],
    )
    support = cgroups.detect("probe", proc=proc)
    assert (support.version("memory"), support.version("pids")) == (1, 1)
    zygote = cgroups.ZygoteCgroup(support, "brrrbot-1")
    mine, counts = memory / "worker/brrrbot-1", pids / "brrrbot-1"
    assert (mine / "cgroup.procs").read_text() == (counts / "cgroup.procs").read_text()
    assert (mine / "cgroup.procs").read_text() == str(os.getpid())
    (mine / "memory.usage_in_bytes").write_text(str(100 * MiB))
    (counts / "pids.current").write_text("3")
    zygote.arm(LIMITS)
    assert (mine / "memory.limit_in_bytes").read_text() == str(372 * MiB)
    assert (mine / "memory.memsw.limit_in_bytes").read_text() == str(372 * MiB)
    assert (counts / "pids.max").read_text() == "15"
    (mine / "memory.oom_control").write_text("oom_kill_disable 0\noom_kill 2\n")
    assert zygote.disarm() == (True, False)
    assert (mine / "memory.limit_in_bytes").read_text() == "-1"
    assert (counts / "pids.max").read_text() == "max"
    zygote.arm(LIMITS)
    (counts / "pids.events").write_text("max 5\n")
    assert zygote.disarm() == (False, True)  # counts since arm(), not since creation


def test_v2_uses_one_directory_and_enables_controllers(tmp_path: Path) -> None:
    unified = tmp_path / "unified"
    (unified / "svc").mkdir(parents=True)
    (unified / "svc/cgroup.controllers").write_text("cpu memory pids\n")
    (unified / "svc/cgroup.subtree_control").write_text("")
    proc = _fake_proc(tmp_path, "0::/svc\n", [("/", str(unified), "cgroup2", "rw")])
    support = cgroups.detect("probe", proc=proc)
    assert [h.version for h in support.hierarchies] == [2]
    assert (unified / "svc/cgroup.subtree_control").read_text() == "+pids"  # the last write
    zygote = cgroups.ZygoteCgroup(support, "brrrbot-1")
    mine = unified / "svc/brrrbot-1"
    assert (mine / "memory.swap.max").read_text() == "0"
    (mine / "memory.current").write_text("0")
    (mine / "pids.current").write_text("1")
    zygote.arm(LIMITS)
    assert (mine / "memory.max").read_text() == str(272 * MiB)
    (mine / "memory.events").write_text("low 0\noom 1\noom_kill 1\n")
    assert zygote.disarm() == (True, False)
    assert (mine / "memory.max").read_text() == "max"


def test_sweep_kills_members_but_never_the_zygote_or_the_spared(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    proc = _fake_proc(tmp_path, "9:pids:/\n", [("/", str(pids), "cgroup", "rw,pids")])
    zygote = cgroups.ZygoteCgroup(cgroups.detect("probe", proc=proc), "brrrbot-1")
    sleepers = [subprocess.Popen(["sleep", "60"]) for _ in range(4)]
    bystander = subprocess.Popen(["sleep", "60"])
    members = [os.getpid(), *(p.pid for p in sleepers)]
    (pids / "brrrbot-1/cgroup.procs").write_text("\n".join(map(str, members)))
    zygote.kill_others(spare=sleepers[0].pid)
    assert [p.wait(5) for p in sleepers[1:]] == [-9, -9, -9]
    assert sleepers[0].poll() is None and bystander.poll() is None
    for process in (sleepers[0], bystander):
        process.kill()
        process.wait()


def test_missing_or_unusable_hierarchies_are_explained(tmp_path: Path) -> None:
    proc = _fake_proc(
        tmp_path,
        "4:memory:/gone\n0::/\n",
        [("/", str(tmp_path / "memory"), "cgroup", "rw,memory")],
    )
    support = cgroups.detect("probe", proc=proc)
    assert support.hierarchies == ()
    assert "cannot create cgroups" in support.notes["memory"]
    assert support.notes["pids"] == "no cgroup hierarchy has this controller"


def test_zygote_cgroup_is_unlimited_between_jobs(zygote: Zygote) -> None:
    zygote.run(request(ADD))
    support = cgroups.detect(f"{cgroups.PREFIX}test-probe")
    for hierarchy in support.hierarchies:
        directory = Path(hierarchy.parent) / f"{cgroups.PREFIX}{zygote.pid}"
        assert str(zygote.pid) in (directory / "cgroup.procs").read_text().split()
        if "pids" in hierarchy.controllers:
            assert (directory / "pids.max").read_text().strip() == "max"
