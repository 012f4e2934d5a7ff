"""``brrrbot grade`` and ``brrrbot worker --check`` as a user runs them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO, SEED_QUESTS, run_cli

SOLUTIONS = REPO / "tests" / "graders" / "solutions"
TASK = "go-brrrr/matmul-three-ways"
ENV = {"QUESTS_DIR": str(SEED_QUESTS)}


def test_grade_correct_file_passes(tmp_path: Path) -> None:
    result = run_cli("grade", str(SOLUTIONS / "correct.py"), "--task", TASK, cwd=tmp_path, env=ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{TASK}: Passed (score 1.00")
    assert result.stdout.count("✓") == 6


CORRECT = tuple(f"matmul_{f}: correct results" for f in ("loops", "dot", "columns"))
OWN = tuple(f"matmul_{f}: builds the product itself" for f in ("loops", "dot", "columns"))


@pytest.mark.parametrize(
    ("name", "failed", "check", "message"),
    [
        (
            "wrong_values.py",
            {*CORRECT, *OWN},  # the own-work checks wait for right results
            CORRECT[0],
            "failed 14 of 14 cases. square 2x2 @ 2x2, float32: 4 of 4 entries wrong at (0, 0): "
            "expected 19, got 5 (max abs error 32). ",
        ),
        (
            "wrong_list.py",
            {*CORRECT, *OWN},  # matmul_dot and matmul_columns are matmul_loops
            CORRECT[0],
            "failed 14 of 14 cases. square 2x2 @ 2x2, float32: returned a list; build and "
            "return a torch.Tensor instead. ",
        ),
        (
            "cheat_operator.py",
            set(OWN),
            OWN[0],
            "matmul_loops uses a whole-matrix product (line 7 `return A @ B`: the @ operator is "
            "a matrix product; while it ran, torch recorded torch.Tensor.matmul). Build it with "
            "three nested loops, C[i, j] += A[i, p] * B[p, j].",
        ),
    ],
)
def test_grade_json_failed(
    name: str, failed: set[str], check: str, message: str, tmp_path: Path
) -> None:
    result = run_cli(
        "grade", str(SOLUTIONS / name), "--task", TASK, "--json", cwd=tmp_path, env=ENV
    )
    assert result.returncode == 1, result.stderr
    verdict = json.loads(result.stdout)
    assert {"task", "status", "score", "checks", "feedback", "duration_s", "device"} <= set(verdict)
    assert verdict["task"] == TASK and verdict["status"] == "failed"
    assert 0 <= verdict["score"] < 1 and verdict["device"] == "cpu"
    assert all({"name", "passed", "message"} <= set(c) for c in verdict["checks"])
    messages = {c["name"]: c["message"] for c in verdict["checks"] if not c["passed"]}
    assert set(messages) == failed
    assert messages[check].startswith(message), messages[check]


def test_grade_list(tmp_path: Path) -> None:
    result = run_cli("grade", "--list", cwd=tmp_path, env=ENV)
    assert result.returncode == 0
    assert result.stdout.split()[0] == TASK
    assert "shape-predictions" not in result.stdout  # quizzes are not graded from files


LISTED = "`brrrbot grade --list` shows the gradable tasks"


@pytest.mark.parametrize(
    ("target", "args", "words"),
    [
        ("correct.py", ["--task", "go-brrrr/nope"], f"unknown task 'go-brrrr/nope'; {LISTED}"),
        (
            "correct.py",
            ["--task", "go-brrrr/shape-predictions"],
            f"go-brrrr/shape-predictions is a quiz task, not graded code; {LISTED}",
        ),
        (
            "missing.py",
            ["--task", TASK, "--json"],
            "cannot read missing.py: No such file or directory",
        ),
    ],
)
def test_grade_bad_input_exits_2(target: str, args: list[str], words: str, tmp_path: Path) -> None:
    path = str(SOLUTIONS / target) if target == "correct.py" else target
    result = run_cli("grade", path, *args, cwd=tmp_path, env=ENV)
    assert result.returncode == 2
    assert result.stderr == f"brrrbot: error: {words}\n"


def test_grade_rejects_bad_files_before_grading(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "solution.txt").write_text("print(1)")
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02\x89PNG")
    for name in ("empty.py", "solution.txt", "binary.py"):
        result = run_cli("grade", name, "--task", TASK, cwd=tmp_path, env=ENV)
        assert result.returncode == 2, name
        assert result.stderr.startswith(f"brrrbot: error: {name}: ")
        assert len(result.stderr.strip().splitlines()) == 1


def test_worker_check_reports_layers(tmp_path: Path) -> None:
    result = run_cli("worker", "--check", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    for layer in ("no network", "resource limits (rlimits)", "every process killed at job end"):
        # its row: active, required
        assert re.search(rf"^{re.escape(layer)} +yes +yes +\S", result.stdout, re.MULTILINE), layer
    assert "minimum isolation (required layers): OK" in result.stdout
    roofline = re.search(
        r"^roofline: ([\d.]+) GB/s memory bandwidth \(STREAM triad\), (\d+) GFLOP/s float32 "
        r"matmul, on 1 core of \S.*$",
        result.stdout,
        re.MULTILINE,
    )
    assert roofline, result.stdout
    assert float(roofline[1]) > 0 and int(roofline[2]) > 0


def test_grade_seed_replays_the_same_draw(tmp_path: Path) -> None:
    """The replay command a verdict prints gives the very same cases and messages."""
    runs = [
        run_cli(
            "grade",
            str(SOLUTIONS / "wrong_values.py"),
            "--task",
            TASK,
            "--json",
            "--seed",
            seed,
            cwd=tmp_path,
            env=ENV,
        )
        for seed in ("424242", "424242", "7")
    ]
    checks = [json.loads(r.stdout)["checks"] for r in runs]
    assert all(r.returncode == 1 for r in runs), [r.stderr for r in runs]
    assert checks[0] == checks[1]
    assert checks[0] != checks[2]  # another draw: other sizes and values


@pytest.mark.parametrize(
    ("seed", "why"),
    [
        ("-1", "-1 is outside 0..2**63 - 1"),
        ("abc", "'abc' is not a whole number"),
        (str(2**63), f"{2**63} is outside 0..2**63 - 1"),
    ],
)
def test_grade_refuses_a_seed_it_cannot_replay(seed: str, why: str, tmp_path: Path) -> None:
    result = run_cli(
        "grade",
        str(SOLUTIONS / "correct.py"),
        "--task",
        TASK,
        "--seed",
        seed,
        cwd=tmp_path,
        env=ENV,
    )
    assert result.returncode == 2
    assert result.stderr.endswith(f"\nbrrrbot grade: error: argument --seed: {why}\n")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("setup", "args", "words"),
    [
        ("empty.py", ["empty.py", "--task", TASK], "empty.py: `empty.py` is empty (0 bytes)."),
        (
            "big.py",
            ["big.py", "--task", TASK],
            "big.py: `big.py` is 11.4 MiB; the limit for .py files is 256 KiB.",
        ),
        ("", ["missing.py", "--task", TASK], "cannot read missing.py: No such file or directory"),
        ("ok.py", ["ok.py", "--task", "go-brrrr/nope"], f"unknown task 'go-brrrr/nope'; {LISTED}"),
        (
            "",
            ["missing.py", "--task", TASK, "--seed", "-3"],
            "argument --seed: -3 is outside 0..2**63 - 1",
        ),
        (
            "",
            ["missing.py"],
            "usage: brrrbot grade FILE --task QUEST/TASK [--seed N] [--json] [--watch] "
            "[--no-trial] [--profile] (or --list)",
        ),
    ],
)
def test_grade_json_answers_every_input_error_in_json(
    setup: str, args: list[str], words: str, tmp_path: Path
) -> None:
    if setup == "empty.py":
        (tmp_path / setup).write_bytes(b"")
    elif setup == "ok.py":
        (tmp_path / setup).write_bytes((SOLUTIONS / "correct.py").read_bytes())
    elif setup == "big.py":
        (tmp_path / setup).write_bytes(b"x = 1\n" * 2_000_000)  # 12 MB
    result = run_cli("grade", *args, "--json", cwd=tmp_path, env=ENV)
    assert result.returncode == 2, result.stderr
    answer = json.loads(result.stdout)  # exactly one JSON object
    assert answer == {"status": "rejected", "message": words}
    assert "Traceback" not in result.stderr


def test_a_speed_ranked_task_reports_its_trial_in_json_and_in_words(tmp_path: Path) -> None:
    """A pass on a speed-ranked task runs the trial: the JSON carries the figures the boards
    rank by, and the text says how fast against the reference and on what."""
    solution = SOLUTIONS / "transformer-internals" / "softmax_correct.py"
    task = "transformer-internals/stable-softmax"
    result = run_cli("grade", str(solution), "--task", task, "--json", cwd=tmp_path, env=ENV)
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["status"] == "passed"
    speed = verdict["speed"]
    assert {"ratio", "learner_s", "reference_s", "spread", "pairs", "device"} <= set(speed)
    assert speed["pairs"] >= 15 and speed["ratio"] > 0 and speed["learner_s"] > 0
    assert speed["device"] and speed["device"] != "cpu"
    (note,) = [n for n in verdict["notes"] if n.startswith("Speed: ")]
    assert f"× the reference on {speed['device']}" in note
    assert speed["instrument"] == 2 and 0 < speed["board_ratio"] <= speed["ratio"]
    assert speed["achieved_gbs"] > 0 and speed["achieved_gflops"] > 0
    # softmax of 2048×1024 float32: read and write each element (8 bytes), 4 FLOPs on it
    assert (speed["moved_bytes"], speed["flops"]) == (8 * 2048 * 1024, 4 * 2048 * 1024)
    assert verdict["profile"] is None  # profiled with --profile only


def test_profile_names_the_bound_and_writes_the_picture_next_to_the_file(tmp_path: Path) -> None:
    source = (SOLUTIONS / "transformer-internals" / "softmax_correct.py").read_text()
    (tmp_path / "mine.py").write_text(source)
    task = "transformer-internals/stable-softmax"
    result = run_cli("grade", "mine.py", "--task", task, "--profile", cwd=tmp_path, env=ENV)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    profiled = [line for line in lines if line.startswith("note: Profile (your code timing")]
    assert len(profiled) == 1 and "advice, never ranked" in profiled[0]
    bounds = ("Compute-bound: ", "Memory-bound: ", "Overhead-bound: ", "Below both roofs: ")
    assert len([line for line in lines if line.removeprefix("note: ").startswith(bounds)]) == 1
    picture = tmp_path / "mine.roofline.png"
    # 4 FLOPs per 8 bytes moved: softmax sits at 0.5 FLOP/byte
    assert re.fullmatch(
        r"roofline: your code [0-9.e+-]+ GFLOP/s at 0\.5 FLOP/byte, the reference's [0-9.e+-]+; "
        r"roofs [0-9.e+-]+ GB/s and [0-9.e+-]+ GFLOP/s; picture written to mine\.roofline\.png",
        lines[-1],
    ), lines[-1]
    assert picture.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_profile_needs_the_trial(tmp_path: Path) -> None:
    solution = SOLUTIONS / "transformer-internals" / "softmax_correct.py"
    task = "transformer-internals/stable-softmax"
    result = run_cli(
        "grade", str(solution), "--task", task, "--profile", "--no-trial", cwd=tmp_path, env=ENV
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "brrrbot: error: --profile profiles a speed trial's function, so it needs the trial: "
        "drop --no-trial"
    )
    assert list(tmp_path.iterdir()) == []


def test_no_trial_skips_the_speed_trial_and_says_so(tmp_path: Path) -> None:
    solution = SOLUTIONS / "transformer-internals" / "softmax_correct.py"
    task = "transformer-internals/stable-softmax"
    result = run_cli(
        "grade", str(solution), "--task", task, "--no-trial", "--json", cwd=tmp_path, env=ENV
    )
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["status"] == "passed" and verdict["speed"] is None
    assert verdict["notes"] == [
        f"speed trial skipped (--no-trial): run `brrrbot grade softmax_correct.py --task {task}` "
        "to time softmax against the reference"
    ]


def test_a_learners_files_named_like_brrrbots_packages_change_nothing(tmp_path: Path) -> None:
    """``bot.py``, ``sandbox.py`` … in the learner's folder: the command grades as ever."""
    for name in ("bot", "graders", "sandbox", "migrations", "json"):
        (tmp_path / f"{name}.py").write_text(f"raise SystemExit('the learner\\'s {name}.py ran')\n")
    (tmp_path / "solution.py").write_bytes((SOLUTIONS / "correct.py").read_bytes())
    script = Path(sys.executable).with_name("brrrbot")
    base = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG", "TMPDIR"}}
    result = subprocess.run(
        [str(script), "grade", "solution.py", "--task", TASK],
        cwd=tmp_path,
        env={**base, **ENV},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "the learner's" not in result.stdout + result.stderr
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{TASK}: Passed (score 1.00")
