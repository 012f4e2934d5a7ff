"""``brrrbot quests list`` and ``brrrbot quests show`` as a learner reads them, from a
folder of their own: plain text at 80 columns in a pipe, rich Markdown on a terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from bot.content import load_content
from bot.content.schema import BuildTask, QuizTask
from tests.support import REPO, SEED_QUESTS, run_cli

ENV = {"QUESTS_DIR": str(SEED_QUESTS)}
CONTENT = load_content(SEED_QUESTS)


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _too_wide(text: str) -> list[str]:
    """Lines over 80 columns, except a single word too long for any line (a long URL)."""
    return [line for line in _lines(text) if len(line) > 80 and " " in line.strip()]


def test_list_shows_every_phase_and_quest_in_map_order(tmp_path: Path) -> None:
    result = run_cli("quests", "list", cwd=tmp_path, env=ENV)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    headings = [line for line in _lines(out) if line.startswith("## Phase ")]
    assert headings == [f"## Phase {n}: {p.title}" for n, p in enumerate(CONTENT.phases, 1)]
    positions = [out.index(f"`{quest.id}`") for quest in CONTENT.quests]
    assert positions == sorted(positions)
    first = CONTENT.quests[0]
    xp = sum(t.xp for t in first.tasks)
    assert f"**{first.title}** `{first.id}`: {len(first.tasks)} tasks, {xp} XP" in out
    assert _too_wide(out) == []


@pytest.mark.parametrize("quest_id", [q.id for q in CONTENT.quests])
def test_show_quest_has_summary_readings_and_how_to_complete_each_task(
    quest_id: str, tmp_path: Path
) -> None:
    quest = CONTENT.quest(quest_id)
    result = run_cli("quests", "show", quest_id, cwd=tmp_path, env=ENV)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    flat = " ".join(out.split())  # wrapping aside
    assert _lines(out)[0] == f"# {quest.title} (`{quest.id}`)"
    assert " ".join(quest.summary.split()[:6]) in flat
    for reading in quest.readings:
        assert f"<{CONTENT.library[reading.ref].url}>" in out
    for task in quest.tasks:
        ref = f"{quest.id}/{task.id}"
        assert f"`{ref}` ({task.kind}, +{task.xp} XP)" in flat
        command = {"build": "/submit", "quiz": "/answer"}.get(task.kind, "/done")
        assert f"`{command} task:{ref}`" in out  # never split across lines
        if isinstance(task, BuildTask):
            assert f"`brrrbot grade FILE --task {ref}`" in out
    assert _too_wide(out) == [], "readable at 80 columns"


def test_show_task_prints_its_whole_prompt_and_interface(tmp_path: Path) -> None:
    _, task = CONTENT.find_task("go-brrrr/matmul-three-ways")
    assert isinstance(task, BuildTask)
    result = run_cli("quests", "show", "go-brrrr/matmul-three-ways", cwd=tmp_path, env=ENV)
    assert result.returncode == 0, result.stderr
    assert " ".join(result.stdout.split()).count(" ".join(task.prompt.split()[-12:])) == 1
    for signature in task.interface:
        assert f"- `{signature}`" in result.stdout


def test_show_quiz_lists_its_questions_but_never_their_explanations(tmp_path: Path) -> None:
    _, quiz = CONTENT.find_task("go-brrrr/shape-predictions")
    assert isinstance(quiz, QuizTask)
    result = run_cli("quests", "show", "go-brrrr/shape-predictions", cwd=tmp_path, env=ENV)
    flat = " ".join(result.stdout.split())
    for number, question in enumerate(quiz.questions, start=1):
        assert f"{number}. {' '.join(question.prompt.split())}" in flat
        if question.explanation:
            assert " ".join(question.explanation.split()) not in flat


@pytest.mark.parametrize(
    ("ref", "words"),
    [
        ("go-brr", "no quest 'go-brr'"),
        ("go-brrrr/nope", "no task 'go-brrrr/nope'"),
        ("nope/", "no quest 'nope'"),
        ("go-brrrr/matmul-three-ways/x", "no task 'go-brrrr/matmul-three-ways/x'"),
        ("Go-Brrrr/matmul-three-ways", "no task 'Go-Brrrr/matmul-three-ways'"),
    ],
)
def test_show_unknown_names_what_exists(ref: str, words: str, tmp_path: Path) -> None:
    result = run_cli("quests", "show", ref, cwd=tmp_path, env=ENV)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"brrrbot: error: {words}") and "go-brrrr, tensor-puzzles" in line


def test_a_trailing_slash_shows_the_quest(tmp_path: Path) -> None:
    result = run_cli("quests", "show", "go-brrrr/", cwd=tmp_path, env=ENV)
    assert result.returncode == 0, result.stderr
    assert _lines(result.stdout)[0] == f"# {CONTENT.quest('go-brrrr').title} (`go-brrrr`)"


def test_on_a_terminal_it_is_rendered_markdown(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "TERM": "xterm-256color", **ENV}
    env["COLUMNS"] = "80"
    with subprocess.Popen(
        [sys.executable, "-m", "bot", "quests", "show", "go-brrrr"],
        cwd=tmp_path,
        env=env,
        stdout=follower,
        stderr=subprocess.PIPE,
    ) as process:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closes when the child exits
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=60) == 0
    os.close(leader)
    shown = b"".join(chunks).decode()
    assert "\x1b[" in shown  # styled
    assert "# Go Brrrr" not in shown and "Go Brrrr" in shown  # the heading is rendered
    assert "**" not in shown
