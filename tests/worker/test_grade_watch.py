"""``brrrbot grade --watch`` as a learner uses it: grade on start, again on every save
(in place or atomic), a bad save reported without stopping, and Ctrl-C leaving nothing."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from bot.jobs.capabilities import Requirements
from bot.jobs.job_spec import JobSpec, SpeedSpec
from bot.worker.local import without_trial
from sandbox.api import Limits
from tests.support import REPO, SEED_QUESTS

SOLUTIONS = REPO / "tests" / "graders" / "solutions"
TASK = "go-brrrr/matmul-three-ways"


class Lines:
    """stdout of a running process, one line at a time, each within a deadline."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        self.fd = process.stdout.fileno()
        self.buffer = b""

    def next(self, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.fd], [], [], max(left, 0))
            assert ready, f"no line within {timeout_s} s (have {self.buffer!r})"
            chunk = os.read(self.fd, 65536)
            assert chunk, f"stdout closed (have {self.buffer!r})"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def verdict(self, timeout_s: float = 60) -> str:
        """The next headline: a verdict or a refused save (check lines, indented, skipped)."""
        while (line := self.next(timeout_s)).startswith("  "):
            pass
        return line


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _watch(tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    """`brrrbot grade ARGS --watch` in ``tmp_path``, as a terminal starts it."""
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "QUESTS_DIR": str(SEED_QUESTS)}
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "grade", *args, "--watch"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Ctrl-C as a terminal delivers it: a suite started in the background by a
        # non-interactive shell runs with SIGINT ignored, and children inherit that
        preexec_fn=_interruptible,
    )


def test_watch_regrades_every_save_and_ctrl_c_leaves_no_process(tmp_path: Path) -> None:
    solution = tmp_path / "matmul.py"
    solution.write_bytes((SOLUTIONS / "correct.py").read_bytes())
    process = _watch(tmp_path, "matmul.py", "--task", TASK)
    try:
        lines = Lines(process)
        assert f" Passed {TASK} " in lines.verdict(120)

        staged = tmp_path / ".matmul.py.swp"  # an editor's atomic save: write, then rename
        staged.write_bytes((SOLUTIONS / "wrong_values.py").read_bytes())
        os.replace(staged, solution)
        assert f" Failed {TASK} " in lines.verdict()

        solution.write_bytes(b"")  # a bad save: said in one line, and the watch goes on
        refused = lines.verdict()
        assert re.fullmatch(
            r"\d\d:\d\d:\d\d matmul\.py: `matmul\.py` is empty \(0 bytes\)\.", refused
        )

        solution.write_bytes((SOLUTIONS / "correct.py").read_bytes())  # saved in place
        assert f" Passed {TASK} " in lines.verdict()

        below = _descendants(process.pid)
        assert below, "the warm sandbox runs below the CLI"
        process.send_signal(signal.SIGINT)  # Ctrl-C
        assert process.wait(timeout=30) == 130
        assert [pid for pid in below if _alive(pid)] == []
        assert process.stderr is not None
        assert "Traceback" not in process.stderr.read().decode()
    finally:
        process.kill()
        process.wait()


def test_a_watch_on_a_speed_ranked_task_grades_without_the_trial(tmp_path: Path) -> None:
    """The watch loop itself, on a task with a speed trial: a passing save gets a verdict
    with no speed result and the one note that points at the plain grade (a trial run, or
    one that could not start, would carry its own ``Speed`` note instead)."""
    task = "transformer-internals/stable-softmax"
    solution = SOLUTIONS / "transformer-internals" / "softmax_correct.py"
    (tmp_path / "softmax.py").write_bytes(solution.read_bytes())
    process = _watch(tmp_path, "softmax.py", "--task", task, "--json")
    try:
        verdict = json.loads(Lines(process).next(120))
        assert (verdict["task"], verdict["status"], verdict["speed"]) == (task, "passed", None)
        assert verdict["notes"] == [
            "speed trial skipped while watching: run `brrrbot grade softmax.py --task "
            f"{task}` to time softmax against the reference"
        ]
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
    finally:
        process.kill()
        process.wait()


def test_a_watch_leaves_the_speed_trial_to_a_plain_grade() -> None:
    """Each save answers in a fraction of a second: the seconds-long trial is skipped, with a
    note naming the command that runs it."""
    spec = JobSpec(
        "transformer-internals/stable-softmax",
        "stable_softmax",
        ("softmax",),
        Requirements(),
        Limits(),
        False,
        "mine.py",
        "def softmax(x): ...",
        speed=SpeedSpec("softmax", "softmax_rows"),
    )
    watched = without_trial(spec, "speed trial skipped while watching")
    assert watched.speed is None and watched.source == spec.source
    (note,) = watched.notes
    assert "speed trial skipped while watching" in note
    assert "brrrbot grade mine.py --task transformer-internals/stable-softmax" in note
    assert without_trial(watched, "again") == watched
