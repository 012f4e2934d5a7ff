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


@pytest.mark.parametrize(
    ("name", "check"),
    [
        ("wrong_values.py", "max abs error"),
        ("wrong_list.py", "list"),
        ("cheat_operator.py", "whole-matrix product"),
    ],
)
def test_grade_json_failed(name: str, check: str, tmp_path: Path) -> None:
    result = run_cli(
        "grade", str(SOLUTIONS / name), "--task", TASK, "--json", cwd=tmp_path, env=ENV
    )
    assert result.returncode == 1, result.stderr
    verdict = json.loads(result.stdout)
    assert {"task", "status", "score", "checks", "feedback", "duration_s", "device"} <= set(verdict)
    assert verdict["task"] == TASK and verdict["status"] == "failed"
    assert 0 <= verdict["score"] < 1 and verdict["device"] == "cpu"
    failed = [c for c in verdict["checks"] if not c["passed"]]
    assert failed and all({"name", "passed", "message"} <= set(c) for c in verdict["checks"])
    assert any(check in c["message"] for c in failed), failed


def test_grade_list(tmp_path: Path) -> None:
    result = run_cli("grade", "--list", cwd=tmp_path, env=ENV)
    assert result.returncode == 0
    assert result.stdout.split()[0] == TASK
    assert "shape-predictions" not in result.stdout  # quizzes are not graded from files


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--task", "go-brrrr/nope"], "unknown task"),
        (["--task", "go-brrrr/shape-predictions"], "quiz task"),
        (["--task", TASK, "--json"], "cannot read"),
    ],
)
def test_grade_bad_input_exits_2(args: list[str], words: str, tmp_path: Path) -> None:
    target = str(SOLUTIONS / "correct.py") if "cannot read" not in words else "missing.py"
    result = run_cli("grade", target, *args, cwd=tmp_path, env=ENV)
    assert result.returncode == 2
    assert words in result.stderr and "Traceback" not in result.stderr


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
    for layer in ("no network", "resource limits", "every process killed at job end"):
        assert layer in result.stdout
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


@pytest.mark.parametrize("seed", ["-1", "abc", str(2**63)])
def test_grade_refuses_a_seed_it_cannot_replay(seed: str, tmp_path: Path) -> None:
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
    assert "--seed" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("setup", "args", "words"),
    [
        ("empty.py", ["empty.py", "--task", TASK], "empty"),
        ("big.py", ["big.py", "--task", TASK], "big.py"),
        ("", ["missing.py", "--task", TASK], "cannot read"),
        ("ok.py", ["ok.py", "--task", "go-brrrr/nope"], "unknown task"),
        ("", ["missing.py", "--task", TASK, "--seed", "-3"], "--seed"),
        ("", ["missing.py"], "--task"),
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
    assert answer["status"] == "rejected" and words in answer["message"], answer
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
    assert speed["achieved_gbs"] > 0  # carried for every task, put in words for fused-gelu only
    assert not [n for n in verdict["notes"] if n.startswith("Roofline:")]


def test_no_trial_skips_the_speed_trial_and_says_so(tmp_path: Path) -> None:
    solution = SOLUTIONS / "transformer-internals" / "softmax_correct.py"
    task = "transformer-internals/stable-softmax"
    result = run_cli(
        "grade", str(solution), "--task", task, "--no-trial", "--json", cwd=tmp_path, env=ENV
    )
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["status"] == "passed" and verdict["speed"] is None
    (note,) = [n for n in verdict["notes"] if "speed trial skipped" in n]
    assert note.startswith("speed trial skipped (--no-trial): run `brrrbot grade ")


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
    assert "ran" not in result.stdout + result.stderr
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{TASK}: Passed (score 1.00")
