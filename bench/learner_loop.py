"""The learner's own loop: a cold ``brrrbot grade`` and a ``--watch`` re-grade, each
against its floor measured in the same run.

Run: .venv/bin/python bench/learner_loop.py [--runs 7] [--saves 21]

- cold grade: ``brrrbot grade correct.py --task go-brrrr/matmul-three-ways`` in a fresh
  process, from a folder outside the repository; floor: ``python -c "import torch"``, the
  least any grading that runs torch can cost.  Target: at most 1.3x the floor.  Also
  shown: the floor without the interpreter's teardown (``brrrbot grade`` skips it as well,
  with ``os._exit`` once its output is flushed), and the same grade with a DISCORD_TOKEN set
  (the zygote exec'd, a second torch import).
- watch: from an atomic save (write, rename) to the verdict's headline on stdout of a
  running ``brrrbot grade --watch``; floor: ``grade_prepared`` of the same file on a warm
  zygote in this process (the sandbox round trip alone).  Target: median at most 150 ms.
Reports medians and ratios; not part of the test suite's pass/fail.
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TASK = "go-brrrr/matmul-three-ways"
SOLUTION = REPO / "tests" / "graders" / "solutions" / "correct.py"


def _env(**extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(REPO),
        "QUESTS_DIR": str(REPO / "quests"),
        **extra,
    }


def _median_run(command: list[str], runs: int, cwd: Path, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def cold(runs: int, folder: Path) -> None:
    (folder / "matmul.py").write_bytes(SOLUTION.read_bytes())
    floor = _median_run([sys.executable, "-c", "import torch"], runs, folder, _env())
    quick = _median_run(
        [sys.executable, "-c", "import os, torch; os._exit(0)"], runs, folder, _env()
    )
    grade = [sys.executable, "-m", "bot", "grade", "matmul.py", "--task", TASK]
    forked = _median_run(grade, runs, folder, _env())
    execed = _median_run(grade, runs, folder, _env(DISCORD_TOKEN="x"))
    print(f"cold: import torch floor  median {floor * 1000:7.0f} ms")
    print(f"cold: same, no teardown   median {quick * 1000:7.0f} ms  (brrrbot grade skips it too)")
    print(f"cold: brrrbot grade       median {forked * 1000:7.0f} ms  {forked / floor:.2f}x floor")
    print(f"cold: exec'd zygote       median {execed * 1000:7.0f} ms  {execed / floor:.2f}x floor")


def _headline(fd: int, buffer: list[bytes], timeout_s: float = 60) -> str:
    """The next line of the watch's stdout that is not an indented check line."""
    deadline = time.monotonic() + timeout_s
    while True:
        data = b"".join(buffer)
        while b"\n" in data:
            line, data = data.split(b"\n", 1)
            if not line.startswith(b"  "):
                buffer[:] = [data]
                return line.decode()
        buffer[:] = [data]
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError("no verdict from the watch")
        buffer.append(os.read(fd, 65536))


def watch(saves: int, folder: Path) -> None:
    from bot.config import Settings
    from bot.content import load_content
    from bot.content.schema import BuildTask
    from bot.worker.grade_job import grade_prepared
    from bot.worker.local import launch_sandbox, prepare

    target = folder / "watched.py"
    source = SOLUTION.read_bytes()
    target.write_bytes(source)
    command = [sys.executable, "-m", "bot", "grade", target.name, "--task", TASK, "--watch"]
    process = subprocess.Popen(command, cwd=folder, env=_env(), stdout=subprocess.PIPE)
    assert process.stdout is not None
    fd, buffer = process.stdout.fileno(), [b""]
    try:
        _headline(fd, buffer, 120)  # the first grade, on start
        times = []
        for n in range(saves):
            staged = folder / ".watched.py.tmp"
            staged.write_bytes(source + f"\n# save {n}\n".encode())
            started = time.perf_counter()
            os.replace(staged, target)
            line = _headline(fd, buffer)
            times.append(time.perf_counter() - started)
            assert " Passed " in line, line
    finally:
        process.terminate()
        process.wait()
    settings = Settings(_env_file=None)
    content = load_content(REPO / "quests")
    task = content.find_task(TASK)[1]
    assert isinstance(task, BuildTask)
    spec = prepare(settings, task, target, TASK, None)
    floors = []
    with closing(launch_sandbox(huge_pages=True)) as zygote:  # as --watch does
        grade_prepared(spec, zygote)
        for _ in range(saves):
            started = time.perf_counter()
            grade_prepared(spec, zygote)
            floors.append(time.perf_counter() - started)
    median, floor = statistics.median(times), statistics.median(floors)
    print(f"watch: warm grade floor   median {floor * 1000:7.0f} ms")
    print(
        f"watch: save to verdict    median {median * 1000:7.0f} ms  {median / floor:.2f}x floor"
        f"  (max {max(times) * 1000:.0f} ms over {saves} saves)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--saves", type=int, default=21)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="brrrbot-learner-") as folder:
        cold(args.runs, Path(folder))
        watch(args.saves, Path(folder))


if __name__ == "__main__":
    main()
