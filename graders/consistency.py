"""Quest files against the graders they name: the check that needs the graders' code.

``brrrbot quests check`` runs it after the content itself checked clean, when torch
is installed (graders import it); the bot never runs it, since it never imports torch.
A build task whose ``interface`` disagrees with its grader would ask learners for
functions the grader never calls, or grade functions the prompt never asked for.
"""

from __future__ import annotations

from pathlib import Path

from bot.content.documents import load_file
from bot.content.loader import quest_paths
from bot.content.problems import Problem
from bot.content.schema import BuildTask, Quest
from graders import REGISTRY, load_grader


def interface_problems(directory: Path) -> list[Problem]:
    problems = []
    label = directory.resolve().name
    for path in quest_paths(directory):
        loaded = load_file(path, f"{label}/{path.relative_to(directory).as_posix()}", Quest)
        if loaded.model is None or loaded.doc is None:
            continue
        for index, task in enumerate(loaded.model.tasks):
            if not isinstance(task, BuildTask) or task.grader not in REGISTRY:
                continue
            expected = load_grader(task.grader).interface
            if task.function_names() != tuple(expected):
                problems.append(
                    loaded.doc.problem(
                        ("tasks", index, "interface"),
                        f"interface names {', '.join(task.function_names())} but grader "
                        f"`{task.grader}` calls {', '.join(expected)}",
                        "list exactly the grader's functions, in its order",
                    )
                )
    return problems
