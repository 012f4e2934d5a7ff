"""Where the quests come from, as a learner and an operator meet it: the shipped quests from
any folder (an installed wheel included), ./quests when there is one, and a wrong QUESTS_DIR
said in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO, SEED_QUESTS, run_cli

TASK = "go-brrrr/matmul-three-ways"
CORRECT = REPO / "tests" / "graders" / "solutions" / "correct.py"
WHAT = "a content directory holds library.yaml, map.yaml and one YAML file per quest"


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    return line


def test_from_any_folder_the_shipped_quests_are_used(tmp_path: Path) -> None:
    shutil.copy(CORRECT, tmp_path / "matmul.py")
    listing = run_cli("quests", "list", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert "`go-brrrr`" in listing.stdout
    graded = run_cli("grade", "matmul.py", "--task", TASK, cwd=tmp_path)
    assert graded.returncode == 0, graded.stderr
    assert graded.stdout.startswith(f"{TASK}: Passed")
    check = run_cli("quests", "check", cwd=tmp_path)
    assert check.returncode == 0 and check.stdout.endswith("quests: content is valid\n")


def test_a_local_quests_folder_wins_over_the_shipped_one(tmp_path: Path) -> None:
    shutil.copytree(SEED_QUESTS, tmp_path / "quests")
    quest = tmp_path / "quests" / "go-brrrr.yaml"
    quest.write_text(quest.read_text().replace("title: Go Brrrr\n", "title: Go Faster\n", 1))
    result = run_cli("quests", "show", "go-brrrr", cwd=tmp_path)
    assert result.stdout.startswith("# Go Faster (`go-brrrr`)"), result.stdout[:200]


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("missing", "does not exist"),
        ("repository", "is not a content directory (it has no library.yaml or map.yaml)"),
        ("a file", "is a file, not a directory"),
    ],
)
def test_a_wrong_quests_dir_is_one_line(where: str, reason: str, tmp_path: Path) -> None:
    target = {
        "missing": tmp_path / "nope",
        "repository": REPO,  # its YAML files (quests/, compose) are not read
        "a file": REPO / "README.md",
    }[where]
    line = _one_line(run_cli("quests", "list", cwd=tmp_path, env={"QUESTS_DIR": str(target)}))
    assert line == f"brrrbot: error: QUESTS_DIR: {target} {reason}; {WHAT}, side by side"


def test_problems_name_the_file_as_the_user_named_the_folder(tmp_path: Path) -> None:
    quests = tmp_path / "mine"
    shutil.copytree(SEED_QUESTS, quests)
    (quests / "drafts").mkdir()
    (quests / "drafts" / "half.yaml").write_text("id: [\n")  # subfolders are not content
    quest = quests / "go-brrrr.yaml"
    quest.write_text(quest.read_text().replace("xp: 60", "xp: 0", 1))
    result = run_cli("quests", "check", str(quests), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith(f"{quests}/go-brrrr.yaml:")  # the leading / kept
    assert "drafts" not in result.stdout


def test_an_installed_wheel_grades_from_any_folder(tmp_path: Path) -> None:
    """Not only the editable install of a checkout: the wheel carries the quests."""
    wheels, target, work = tmp_path / "wheels", tmp_path / "site", tmp_path / "work"
    work.mkdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("brrrbot-*.whl")
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert sorted(p.name for p in (target / "bot" / "quests").iterdir()) == sorted(
        p.name for p in SEED_QUESTS.glob("*.yaml")
    )
    fonts = target / "bot" / "assets" / "fonts"
    assert (fonts / "DejaVuSans.ttf").is_file() and (fonts / "LICENSE-DejaVu.txt").is_file()
    shutil.copy(CORRECT, work / "matmul.py")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(target)}
    result = subprocess.run(
        [sys.executable, "-m", "bot", "grade", "matmul.py", "--task", TASK],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{TASK}: Passed")
    where = subprocess.run(
        [sys.executable, "-c", "import bot; print(bot.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(target))  # the wheel's code, not the checkout's
