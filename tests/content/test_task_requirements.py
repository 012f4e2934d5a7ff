"""A build task may say what grading needs; the bot turns that into job requirements."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.content.schema import BuildTask
from bot.jobs.capabilities import Capabilities, Requirements

BASE = {
    "id": "t",
    "title": "T",
    "xp": 10,
    "prompt": "p",
    "kind": "build",
    "grader": "matmul_three_ways",
    "interface": ["f(x) -> Tensor"],
}


def test_a_task_without_requires_runs_anywhere() -> None:
    needs = Requirements.of(BuildTask.model_validate(BASE))
    assert needs == Requirements() and Capabilities().satisfies(needs)
    assert needs.describe() == "a grading worker"


def test_cuda_and_memory_become_requirements() -> None:
    task = BuildTask.model_validate(BASE | {"requires": {"cuda": True, "min_gpu_memory_gib": 1.5}})
    needs = Requirements.of(task)
    assert needs == Requirements(needs_cuda=True, min_gpu_memory_mib=1536)
    assert needs.describe() == "a CUDA GPU with at least 1.5 GiB of memory"
    assert not Capabilities().satisfies(needs)
    assert not Capabilities(cuda=True, gpu_memory_mib=1024).satisfies(needs)
    assert Capabilities(cuda=True, gpu_memory_mib=2048).satisfies(needs)


@pytest.mark.parametrize(
    ("requires", "message"),
    [
        ({"min_gpu_memory_gib": 16}, "min_gpu_memory_gib is set but cuda is not"),
        ({"cuda": True, "min_gpu_memory_gib": -1}, "greater than or equal to 0"),
        ({"gpu": True}, "Extra inputs are not permitted"),
    ],
)
def test_bad_requirements_are_refused(requires: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        BuildTask.model_validate(BASE | {"requires": requires})
