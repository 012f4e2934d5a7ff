"""QUEST/TASK references and lookups through Content."""

from __future__ import annotations

import pytest

from bot.content import BadTaskRef, BuildTask, TaskRef, function_name, load_content
from tests.content.fixture_dir import ContentDir


def test_parse_and_format_round_trip() -> None:
    ref = TaskRef.parse(" go-brrrr/matmul-three-ways ")
    assert ref == TaskRef("go-brrrr", "matmul-three-ways")
    assert str(ref) == "go-brrrr/matmul-three-ways"


@pytest.mark.parametrize("text", ["go-brrrr", "go-brrrr/", "/task", "a/b/c", "Go/Task", "a b/c"])
def test_malformed_refs_are_rejected(text: str) -> None:
    with pytest.raises(BadTaskRef, match="QUEST/TASK") as refused:
        TaskRef.parse(text)
    assert repr(text) in str(refused.value)  # it quotes what it was given
    assert isinstance(refused.value, ValueError)


def test_content_find_task(content_dir: ContentDir) -> None:
    content = load_content(content_dir.path)
    quest, task = content.find_task("first/build-it")
    assert quest.id == "first" and isinstance(task, BuildTask)
    assert content.find_task(TaskRef("first", "quiz-it"))[1].kind == "quiz"
    with pytest.raises(KeyError, match="no task 'nope'"):
        content.find_task("first/nope")
    with pytest.raises(KeyError, match="unknown quest 'second'"):
        content.find_task("second/build-it")
    with pytest.raises(KeyError, match="QUEST/TASK"):
        content.find_task("build-it")


@pytest.mark.parametrize(
    ("signature", "name"),
    [
        ("matmul_loops(A, B) -> Tensor", "matmul_loops"),
        ("matmul_dot(A, B)", "matmul_dot"),
        ("  f()  ", "f"),
        ("attention(q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]", "attention"),
    ],
)
def test_function_name(signature: str, name: str) -> None:
    assert function_name(signature) == name
