"""The shipped quests/ directory: clean, and shaped the way the bot expects."""

from __future__ import annotations

import pytest

from bot.content import BuildTask, Content, QuizTask, answer_matches, check_content, load_content
from graders.registry import grader_names
from tests.support import SEED_QUESTS


@pytest.fixture(scope="module")
def seed() -> Content:
    return load_content(SEED_QUESTS)


def test_seed_checks_clean() -> None:
    assert [str(p) for p in check_content(SEED_QUESTS)] == []


def test_go_brrrr_opens_the_map(seed: Content) -> None:
    assert seed.phases[0].id == "foundations"
    assert seed.quests[0].id == "go-brrrr"
    assert seed.phase_of("go-brrrr").title == "Foundations: the three bottlenecks"


def test_matmul_build_task(seed: Content) -> None:
    task = seed.find_task("go-brrrr/matmul-three-ways")[1]
    assert isinstance(task, BuildTask)
    assert task.xp == 60
    assert task.grader == "matmul_three_ways" and task.grader in grader_names()
    assert task.function_names() == ("matmul_loops", "matmul_dot", "matmul_columns")
    for forbidden in ("torch.matmul", "`@`", "einsum", "tensordot", "linear", "bmm"):
        assert forbidden in task.prompt
    assert "/submit" in task.prompt
    assert "brrrbot grade FILE --task go-brrrr/matmul-three-ways" in task.prompt


def test_shape_predictions_accept_any_notation(seed: Content) -> None:
    quiz = seed.find_task("go-brrrr/shape-predictions")[1]
    assert isinstance(quiz, QuizTask)
    assert len(quiz.questions) == 3
    for q in quiz.questions:
        assert q.explanation
        assert answer_matches("torch.Size([4, 128, 128])", q)
        assert answer_matches("4x128x128", q)
        assert not answer_matches("(4, 128, 64)", q)


@pytest.mark.parametrize(
    ("question_id", "right", "wrong"),
    [
        ("batching", "memory-bandwidth", "compute"),
        ("quantization", "Memory", "overhead"),
        ("paged-kv", "bandwidth", "overhead"),
        ("speculative-decoding", "memory bandwidth", "compute"),
        ("operator-fusion", "memory bandwidth", "compute"),
        ("cuda-graphs", "overhead", "memory bandwidth"),
        ("bf16-tensor-cores", "FLOPs", "memory"),
    ],
)
def test_name_the_bottleneck(seed: Content, question_id: str, right: str, wrong: str) -> None:
    quiz = seed.find_task("go-brrrr/name-the-bottleneck")[1]
    assert isinstance(quiz, QuizTask)
    (q,) = [q for q in quiz.questions if q.id == question_id]
    assert q.explanation
    assert answer_matches(right, q)
    assert not answer_matches(wrong, q)


def test_self_reported_exercises(seed: Content) -> None:
    assert seed.find_task("go-brrrr/zero-to-hero")[1].kind == "exercise"
    assert seed.find_task("go-brrrr/matrix-drill")[1].kind == "exercise"


def test_go_brrrr_readings_start_with_the_brrr_post(seed: Content) -> None:
    refs = [r.ref for r in seed.quest("go-brrrr").readings]
    assert refs[0] == "brrr-intro"
    assert refs.index("pytorch-dispatcher") == refs.index("pytorch-internals") + 1
    assert seed.library["brrr-intro"].authors == ("Horace He",)


def test_library_holds_later_readings_too(seed: Content) -> None:
    for entry_id in (
        "llms-from-scratch-repo",
        "inference-engineering",
        "pytorch-dev-podcast",
        "llm-architecture-gallery",
        "gpu-glossary",
    ):
        assert entry_id in seed.library
    assert seed.library["inference-engineering"].cost == "free online, print paid"
    assert seed.cited_by["inference-engineering"] == ("inference-engine",)
    assert seed.cited_by["gpu-glossary"] == ("go-brrrr", "roofline")
    assert all(entry.url.startswith("https://") for entry in seed.library.values())


def test_the_map_follows_the_inference_path(seed: Content) -> None:
    assert [q.id for q in seed.quests] == [
        "go-brrrr",
        "tensor-puzzles",
        "transformer-internals",
        "forward-pass",
        "roofline",
        "flops-accounting",
        "inference-engine",
        "training-path",
    ]
    order = [q.id for q in seed.quests]
    for quest in seed.quests[1:]:  # every prerequisite comes earlier on the map
        assert quest.prerequisite is not None
        assert order.index(quest.prerequisite) < order.index(quest.id)


def test_every_build_task_matches_its_grader(seed: Content) -> None:
    """Content and code are validated together: same functions, in the same order."""
    from graders.registry import load_grader  # imports torch: fine in tests, never in the bot

    tasks = [t for q in seed.quests for t in q.tasks if isinstance(t, BuildTask)]
    assert len(tasks) >= 8
    for task in tasks:
        assert load_grader(task.grader).interface == task.function_names(), task.id


def test_every_speed_ranked_prompt_says_what_the_learner_will_see(seed: Content) -> None:
    """A trial, the bound in a sentence, a profile that is only advice, a roofline picture,
    and the terminal command that shows the same."""
    ranked = [
        (f"{quest.id}/{task.id}", task)
        for quest in seed.quests
        for task in quest.tasks
        if isinstance(task, BuildTask) and task.speed is not None
    ]
    assert {ref for ref, _ in ranked} == {
        "transformer-internals/stable-softmax",
        "transformer-internals/attention-from-scratch",
        "tensor-puzzles/broadcasting-drills",
        "roofline/fused-gelu",
        "inference-engine/kv-cache-decode",
    }
    for ref, task in ranked:
        prompt = " ".join(task.prompt.split())  # as Markdown reads it: wrapped lines join
        for said in (
            "profiles your function once (your own process timing itself: advice, never ranked)",
            "compute-bound, memory-bound, overhead-bound, or below both roofs",
            "shows a roofline picture: this worker's bandwidth slope and compute ceiling",
            f"`brrrbot grade FILE --task {ref} --profile`",
        ):
            assert said in prompt, (ref, said)
