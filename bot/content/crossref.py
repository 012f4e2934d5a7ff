"""Rules that look past one field: ids that must be unique, names that must
resolve, prerequisites that must not loop.

Each check takes only the names it resolves against, so the directory checker
and the single-quest check (``/admin quest-add``) share them.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping

from bot.content.problems import Problem
from bot.content.schema import BuildTask, Quest, QuizTask
from bot.content.yaml_source import DataPath, YamlDocument
from graders.declaration import Signature
from graders.registry import find, grader_names


def duplicate_problems(
    doc: YamlDocument, what: str, ids: Iterable[tuple[str, DataPath]], hint: str = ""
) -> list[Problem]:
    """Flag every repeat of an id at the repeat's line, naming the first one's line."""
    hint = hint or f"make each {what} unique, or remove the repeat"
    first: dict[str, DataPath] = {}
    problems = []
    for value, path in ids:
        if value in first:
            line = doc.line_of(first[value])
            problems.append(
                doc.problem(
                    path,
                    f"duplicate {what} `{value}` (first at line {line})",
                    hint,
                )
            )
        else:
            first[value] = path
    return problems


def _grader_problems(task: BuildTask, index: int, doc: YamlDocument) -> list[Problem]:
    """The grader must exist, and what a task states of it must be what it declares: its
    functions, in its order and with its parameters (else the prompt asks for functions it
    never calls, or calls them with arguments the prompt never named), and its speed trial.
    A task that leaves ``interface`` or ``speed`` out took the grader's (``BuildTask``)."""
    info = find(task.grader)
    if info is None:
        hint = _one_of(task.grader, grader_names(), "add the grader to graders/tasks/")
        return [doc.problem(("tasks", index, "grader"), f"unknown grader `{task.grader}`", hint)]
    problems = []
    if task.function_names() != info.interface:
        problems.append(
            doc.problem(
                ("tasks", index, "interface"),
                f"interface names {', '.join(task.function_names())} but grader "
                f"`{task.grader}` calls {', '.join(info.interface)}",
                "list exactly the grader's functions, in its order",
            )
        )
    else:
        declared = zip(task.interface, info.declaration.functions, strict=True)
        for i, (stated, signature) in enumerate(declared):
            if Signature.parse(stated) != Signature.parse(signature):
                problems.append(
                    doc.problem(
                        ("tasks", index, "interface", i),
                        f"interface has `{stated.strip()}` but grader `{task.grader}` "
                        f"declares `{signature}`",
                        "write the grader's parameters, or leave `interface` out to take "
                        "the grader's",
                    )
                )
    stated_speed = None if task.speed is None else (task.speed.function, task.speed.reference)
    declared_speed = None if info.speed is None else (info.speed.function, info.speed.reference)
    if stated_speed != declared_speed:
        problems.append(
            doc.problem(
                ("tasks", index, "speed"),
                f"speed {_race(stated_speed, 'is null')} but grader `{task.grader}` "
                f"{_race(declared_speed, 'is not speed-ranked')}",
                "leave `speed` out to take the grader's",
            )
        )
    return problems


def _race(race: tuple[str, str] | None, otherwise: str) -> str:
    return otherwise if race is None else f"races {race[0]} against {race[1]}"


def quest_problems(
    quest: Quest,
    doc: YamlDocument,
    *,
    library_ids: Collection[str] | None,
    quest_ids: Collection[str],
    phase_ids: Collection[str] | None,
) -> list[Problem]:
    """Problems inside one valid quest.  ``None`` for ``library_ids`` or
    ``phase_ids`` skips that check: the library or map is broken and already
    reported, so every ref would be a false alarm."""
    problems = duplicate_problems(
        doc, "task id", ((t.id, ("tasks", i, "id")) for i, t in enumerate(quest.tasks))
    )
    for i, task in enumerate(quest.tasks):
        if isinstance(task, QuizTask):
            questions = (
                (q.id, ("tasks", i, "questions", j, "id")) for j, q in enumerate(task.questions)
            )
            problems += duplicate_problems(doc, "question id", questions)
        if isinstance(task, BuildTask):
            problems += _grader_problems(task, i, doc)
    readings = [(r.ref, ("readings", i, "ref")) for i, r in enumerate(quest.readings)]
    problems += duplicate_problems(doc, "reading", readings, hint="cite each reading once")
    if library_ids is not None:
        for ref, path in readings:
            if ref not in library_ids:
                problems.append(
                    doc.problem(
                        path,
                        f"unknown reading `{ref}`",
                        _one_of(ref, library_ids, f"add `{ref}` to library.yaml"),
                    )
                )
    if quest.prerequisite is not None and quest.prerequisite not in quest_ids:
        problems.append(
            doc.problem(
                ("prerequisite",),
                f"unknown prerequisite quest `{quest.prerequisite}`",
                _one_of(quest.prerequisite, quest_ids, "write a quest with that id"),
            )
        )
    if phase_ids is not None and quest.phase not in phase_ids:
        problems.append(
            doc.problem(
                ("phase",),
                f"unknown phase `{quest.phase}`",
                f"use a phase id from map.yaml: {', '.join(sorted(phase_ids))}",
            )
        )
    return problems


def prerequisite_cycles(prerequisites: Mapping[str, str | None]) -> list[tuple[str, ...]]:
    """Each prerequisite loop once, rotated to start at its smallest id.

    Every quest has at most one prerequisite, so following the chain from each
    quest either leaves the known quests, reaches a finished chain, or loops.
    """
    done: set[str] = set()
    cycles = []
    for start in sorted(prerequisites):
        chain: list[str] = []
        node: str | None = start
        while node is not None and node in prerequisites and node not in done:
            if node in chain:
                loop = chain[chain.index(node) :]
                smallest = loop.index(min(loop))
                cycles.append(tuple(loop[smallest:] + loop[:smallest]))
                break
            chain.append(node)
            node = prerequisites[node]
        done.update(chain)
    return cycles


def cycle_problem(doc: YamlDocument, cycle: tuple[str, ...]) -> Problem:
    """Report a loop at the ``prerequisite`` line of the quest in ``doc``."""
    return doc.problem(
        ("prerequisite",),
        f"prerequisite cycle: {' -> '.join((*cycle, cycle[0]))}",
        "remove one `prerequisite` so the on-ramps form a chain",
    )


def _one_of(name: str, known: Iterable[str], otherwise: str) -> str:
    """Suggest the closest known name, since most unknown names are typos."""
    close = difflib.get_close_matches(name, list(known), n=1)
    if close:
        return f"did you mean `{close[0]}`? otherwise {otherwise}"
    return f"fix the id, or {otherwise}"
