"""The roofline a worker measures at start: plausible, pinned to one core on one thread, and
leaving the process as it found it."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from bot.worker import peaks
from bot.worker.peaks import MIB, Peaks
from sandbox.cores import cpu_model
from tests.support import REPO


@pytest.fixture(autouse=True)
def _lock_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(peaks, "LOCK_DIR", tmp_path)


def test_a_measurement_is_plausible_pinned_and_leaves_no_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    core = min(os.sched_getaffinity(0))  # not the default (the highest): the argument counts
    affinity, threads = os.sched_getaffinity(0), torch.get_num_threads()
    seen: list[tuple[set[int], int]] = []
    best_seconds = peaks._best_seconds

    def observed(kernel: Callable[[], object], budget_s: float) -> float:
        def watched() -> object:  # what holds while the timed kernel itself runs
            seen.append((os.sched_getaffinity(0), torch.get_num_threads()))
            return kernel()

        return best_seconds(watched, budget_s)

    monkeypatch.setattr(peaks, "_best_seconds", observed)
    measured = peaks.measure_peaks(core)
    assert 0.5 <= measured.bandwidth_gbs <= 2000, measured
    assert 0.5 <= measured.gflops <= 100_000, measured
    assert measured.cpu_model == cpu_model()
    assert len(seen) >= 2 * (1 + peaks.MIN_REPS)  # both kernels: a warm-up and the timed runs
    assert all(view == ({core}, 1) for view in seen), seen
    assert (os.sched_getaffinity(0), torch.get_num_threads()) == (affinity, threads)


def test_a_failed_measurement_restores_affinity_and_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    affinity, threads = os.sched_getaffinity(0), torch.get_num_threads()

    def broken(n: int) -> float:
        assert os.sched_getaffinity(0) == {max(affinity)} and torch.get_num_threads() == 1
        raise RuntimeError("out of memory")

    monkeypatch.setattr(peaks, "_triad_gbs", lambda array_bytes, repeat=1: 10.0)
    monkeypatch.setattr(peaks, "_matmul_gflops", broken)
    with pytest.raises(RuntimeError, match="out of memory"):
        peaks.measure_peaks()  # on the job core, the highest
    assert (os.sched_getaffinity(0), torch.get_num_threads()) == (affinity, threads)


def test_measurements_on_one_core_take_turns(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A pool's workers start together on one job core: one measures while the other waits,
    blocked in the kernel on the core's lock (its waiter listed in /proc/locks) with nothing
    measured yet."""
    kernels: list[str] = []

    def triad(array_bytes: int, repeat: int = 1) -> float:
        kernels.append("triad")
        return 10.0

    monkeypatch.setattr(peaks, "_triad_gbs", triad)
    monkeypatch.setattr(peaks, "_matmul_gflops", lambda n: 20.0)
    core = max(os.sched_getaffinity(0))
    other = os.open(tmp_path / f"brrrbot-roofline-cpu{core}.lock", os.O_RDONLY | os.O_CREAT)
    fcntl.flock(other, fcntl.LOCK_EX)  # another worker is measuring on that core
    results: list[Peaks] = []
    measuring = threading.Thread(target=lambda: results.append(peaks.measure_peaks(core)))
    measuring.start()
    try:
        _wait_for(lambda: _lock_waiters(os.fstat(other).st_ino) == 1, timeout_s=10)
        assert (kernels, results) == ([], [])
    finally:
        os.close(other)
        measuring.join(10)
    assert not measuring.is_alive()
    assert [(p.bandwidth_gbs, p.gflops) for p in results] == [(10.0, 20.0)]


def _lock_waiters(inode: int) -> int:
    """How many lockers /proc/locks lists as blocked (``->``) on the file ``inode``."""
    lines = Path("/proc/locks").read_text().splitlines()
    return sum(
        1
        for line in lines
        if "->" in line.split()
        and any(f.count(":") == 2 and f.endswith(f":{inode}") for f in line.split())
    )


def _wait_for(condition: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout_s} s"
        # /proc/locks sends no notice when a waiter joins: polling it is the only way to see one
        time.sleep(0.005)


def test_current_measures_once_for_concurrent_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int | None] = []

    def fake(core: int | None = None) -> Peaks:
        calls.append(core)
        return Peaks("Test CPU", 12.5, 99.0)

    monkeypatch.setattr(peaks, "_measured", [])
    monkeypatch.setattr(peaks, "measure_peaks", fake)
    results: list[Peaks] = []
    callers = [threading.Thread(target=lambda: results.append(peaks.current())) for _ in range(8)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert calls == [None]  # once, on the job core
    assert results == [Peaks("Test CPU", 12.5, 99.0)] * 8


def test_describe_is_one_line() -> None:
    line = Peaks("Intel(R) Xeon(R) Processor", 19.34, 85.2).describe()
    assert line == (
        "19.3 GB/s memory bandwidth (STREAM triad), 85 GFLOP/s float32 matmul, "
        "on 1 core of Intel(R) Xeon(R) Processor"
    )


def test_triad_arrays_are_four_times_the_largest_cache_within_bounds(tmp_path: Path) -> None:
    cache = tmp_path / "cpu3" / "cache"
    for index, size in enumerate(["48K", "32K", "2048K", "12M"]):
        (cache / f"index{index}").mkdir(parents=True)
        (cache / f"index{index}" / "size").write_text(f"{size}\n")
    (cache / "index4").mkdir()
    (cache / "index4" / "size").write_text("unknown\n")  # unreadable sizes are skipped
    assert peaks.largest_cache_bytes(3, tmp_path) == 12 * MIB
    assert peaks.largest_cache_bytes(0, tmp_path) == 0  # no such CPU in sysfs
    assert peaks.triad_array_bytes(12 * MIB) == 48 * MIB
    assert peaks.triad_array_bytes(0) == 32 * MIB
    assert peaks.triad_array_bytes(2 * MIB) == 32 * MIB
    assert peaks.triad_array_bytes(300 * MIB) == peaks.MAX_ARRAY_BYTES == 64 * MIB
    assert peaks.triad_array_bytes(10 * MIB + 1) == 41 * MIB  # whole MiB, rounded up
    assert [peaks.parse_cache_size(s) for s in ("48K", "1M", "1G", "4096")] == [
        48 << 10,
        1 << 20,
        1 << 30,
        4096,
    ]


@pytest.mark.parametrize(
    ("text", "model"),
    [
        (
            "processor\t: 0\nvendor_id\t: GenuineIntel\n"
            "model name\t: Intel(R)  Xeon(R)   Processor\nflags\t\t: fpu vme\n",
            "Intel(R) Xeon(R) Processor",
        ),
        (  # a Raspberry Pi: "Hardware" comes first
            "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd\n\n"
            "Hardware\t: BCM2835\nRevision\t: c03114\nModel\t\t: Raspberry Pi 4 Model B\n",
            "BCM2835",
        ),
        (
            "processor\t: 0\nModel\t\t: Raspberry Pi 5 Model B Rev 1.0\n",
            "Raspberry Pi 5 Model B Rev 1.0",
        ),
        (  # an ARM server names no model: the machine's architecture instead
            "processor\t: 0\nBogoMIPS\t: 243.75\nCPU implementer\t: 0x41\nCPU part\t: 0xd40\n",
            f"{os.uname().machine} CPU",
        ),
        ("model name\t:\nHardware\t: Generic DT based system\n", "Generic DT based system"),
    ],
)
def test_cpu_model_from_cpuinfo(text: str, model: str, tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(text)
    assert cpu_model(str(cpuinfo)) == model


def test_cpu_model_without_cpuinfo(tmp_path: Path) -> None:
    assert cpu_model(str(tmp_path / "missing")) == f"{os.uname().machine} CPU"


def test_the_heartbeat_side_never_imports_torch() -> None:
    # the bot process reads heartbeats (bot.jobs.heartbeat imports Peaks from here)
    code = (
        "import sys, bot.jobs.heartbeat, bot.worker.peaks; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr


def test_the_cache_triad_is_timed_on_arrays_a_core_keeps_in_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The physics floor needs the fastest bytes can move when they are already in a core's
    cache: the second triad runs on three 256 KiB arrays, many passes per timed run."""
    asked: list[tuple[int, int]] = []

    def triad(array_bytes: int, repeat: int = 1) -> float:
        asked.append((array_bytes, repeat))
        return 10.0 if repeat == 1 else 40.0

    monkeypatch.setattr(peaks, "_triad_gbs", triad)
    monkeypatch.setattr(peaks, "_matmul_gflops", lambda n: 20.0)
    measured = peaks.measure_peaks()
    assert measured.cache_gbs == 40.0 and measured.bandwidth_gbs == 10.0
    assert asked[-1] == (256 * 1024, 64) and asked[0][0] >= 32 * 1024 * 1024


def test_a_terminal_remembers_its_roofline_for_a_week(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``brrrbot grade`` measures once and reads it back after; a stale file, another CPU
    or garbage in the file is measured again."""
    measured: list[int] = []

    def fake(core: int | None = None) -> Peaks:
        measured.append(1)
        return Peaks(peaks.cpu_model(), 12.5, 99.0, 40.0)

    monkeypatch.setattr(peaks, "measure_peaks", fake)
    path = tmp_path / "brrrbot" / "roofline.json"
    monkeypatch.setattr(peaks, "_measured", [])
    first = peaks.remembered(path)
    monkeypatch.setattr(peaks, "_measured", [])
    assert peaks.remembered(path) == first and len(measured) == 1 and first.cache_gbs == 40.0
    for stale in ("old", "other cpu", "garbage"):
        if stale == "old":
            old = time.time() - peaks.REMEMBERED_FOR_S - 60
            os.utime(path, (old, old))
        elif stale == "other cpu":
            path.write_text(path.read_text().replace(peaks.cpu_model(), "Another CPU"))
        else:
            path.write_text("{not json")
        monkeypatch.setattr(peaks, "_measured", [])
        peaks.remembered(path)
    assert len(measured) == 4
