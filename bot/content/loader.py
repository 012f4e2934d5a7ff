"""Check and load a whole content directory, reporting every problem at once.

A moderator fixing content wants the full list, not one error per run, so each
file is checked on its own and cross-file rules run on whatever did parse.
Ids declared in files that failed the schema still count as existing, so one
typo does not cascade into "unknown quest" reports elsewhere.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from bot.content.catalogue import Content
from bot.content.crossref import (
    cycle_problem,
    duplicate_problems,
    prerequisite_cycles,
    quest_problems,
)
from bot.content.documents import Loaded, load_file
from bot.content.problems import ContentError, Problem, sort_problems
from bot.content.schema import ContentMap, Library, Quest
from bot.content.yaml_source import DataPath, YamlDocument

LIBRARY_FILE = "library.yaml"
MAP_FILE = "map.yaml"
WHAT_IT_HOLDS = (
    f"a content directory holds {LIBRARY_FILE}, {MAP_FILE} and one YAML file per quest, "
    "side by side"
)


def check_content(directory: str | Path) -> list[Problem]:
    """Every problem in the content directory, sorted by file and line; empty if clean."""
    return _read(Path(directory))[1]


def load_content(directory: str | Path) -> Content:
    """The validated content of ``directory``; raises ContentError listing all problems."""
    content, problems = _read(Path(directory))
    if content is None:
        raise ContentError(problems)
    return content


def directory_problem(directory: Path) -> str | None:
    """Why ``directory`` cannot be a content directory ("does not exist", ...), or None.

    Checked before reading anything, so that pointing at the wrong folder (a repository's
    root, /tmp) says so in one line instead of parsing every YAML file there.
    """
    if not directory.exists():
        return "does not exist"
    if not directory.is_dir():
        return "is a file, not a directory"
    if not any((directory / name).is_file() for name in (LIBRARY_FILE, MAP_FILE)):
        return f"is not a content directory (it has no {LIBRARY_FILE} or {MAP_FILE})"
    return None  # one index file missing is a problem of the content: said per file


def _read(directory: Path) -> tuple[Content | None, list[Problem]]:
    problem = directory_problem(directory)
    if problem is not None:
        return None, [Problem(str(directory), None, problem, WHAT_IT_HOLDS)]

    def shown(path: Path) -> str:
        """The path as the user named the directory: ``quests/go-brrrr.yaml`` for a relative
        QUESTS_DIR, ``/srv/quests/go-brrrr.yaml`` for an absolute one."""
        return (directory / path.relative_to(directory)).as_posix()

    library = load_file(
        directory / LIBRARY_FILE,
        shown(directory / LIBRARY_FILE),
        Library,
        "create it with `entries:`, one item per reading",
    )
    content_map = load_file(
        directory / MAP_FILE,
        shown(directory / MAP_FILE),
        ContentMap,
        "create it with `phases:`, each listing its quest ids in order",
    )
    paths = quest_paths(directory)
    quests = [load_file(path, shown(path), Quest) for path in paths]
    problems = [*library.problems, *content_map.problems]
    for loaded in quests:
        problems += loaded.problems
    # A file too broken to read its id is assumed to declare the id of its name
    # (files are named after their quest), so the map does not also report it.
    unread = {path.stem for path, loaded in zip(paths, quests, strict=True) if loaded.doc is None}
    problems += _cross_problems(library, content_map, quests, unread)
    if problems or library.model is None or content_map.model is None:
        return None, sort_problems(problems)
    content = Content.build(
        library.model.entries,
        content_map.model.phases,
        (q.model for q in quests if q.model is not None),
    )
    return content, []


def quest_paths(directory: Path) -> list[Path]:
    """The quest files of a content directory (not of its subfolders), sorted."""
    return [p for p in sorted(directory.glob("*.yaml")) if _is_quest_file(p, directory)]


def _is_quest_file(path: Path, directory: Path) -> bool:
    """Everything but the two index files; dot-files (editor locks, caches) are skipped."""
    relative = path.relative_to(directory)
    if relative.as_posix() in (LIBRARY_FILE, MAP_FILE):
        return False
    return not any(part.startswith(".") for part in relative.parts)


def _cross_problems(
    library: Loaded[Library],
    content_map: Loaded[ContentMap],
    quests: list[Loaded[Quest]],
    unread_ids: set[str],
) -> list[Problem]:
    problems: list[Problem] = []
    library_ids: set[str] | None = None
    if library.doc is not None:
        declared = list(_declared_ids(library.doc, ("entries",)))
        problems += duplicate_problems(library.doc, "library id", declared)
        library_ids = {value for value, _ in declared}
    quest_docs, found = _quest_docs(quests)
    problems += found
    quest_ids = quest_docs.keys() | unread_ids
    phase_ids: set[str] | None = None
    placed: dict[str, str] = {}  # quest id -> id of the phase that lists it
    if content_map.model is not None and content_map.doc is not None:
        phase_ids = {phase.id for phase in content_map.model.phases}
        for phase in reversed(content_map.model.phases):
            placed.update(dict.fromkeys(phase.quests, phase.id))
        problems += _map_problems(content_map.model, content_map.doc, quest_ids)
    valid = [(q.model, q.doc) for q in quests if q.model is not None and q.doc is not None]
    for quest, doc in valid:
        problems += quest_problems(
            quest, doc, library_ids=library_ids, quest_ids=quest_ids, phase_ids=phase_ids
        )
        if phase_ids is not None:
            problems += _placement_problems(quest, doc, placed, phase_ids)
    cycles = prerequisite_cycles({quest.id: quest.prerequisite for quest, _ in valid})
    problems += [cycle_problem(quest_docs[cycle[0]], cycle) for cycle in cycles]
    return problems


def _declared_ids(doc: YamlDocument, at: DataPath) -> Iterator[tuple[str, DataPath]]:
    """``id`` of each item in the raw list at ``at``, whether or not the item is valid."""
    items: Any = doc.data
    for part in at:
        items = items.get(part) if isinstance(items, dict) else None
    for index, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            yield item["id"], (*at, index, "id")


def _quest_docs(quests: list[Loaded[Quest]]) -> tuple[dict[str, YamlDocument], list[Problem]]:
    """The file declaring each quest id (valid or not), and problems for ids declared twice."""
    docs: dict[str, YamlDocument] = {}
    problems = []
    for doc in (loaded.doc for loaded in quests):
        quest_id = doc.data.get("id") if doc is not None and isinstance(doc.data, dict) else None
        if doc is None or not isinstance(quest_id, str):
            continue
        first = docs.get(quest_id)
        if first is None:
            docs[quest_id] = doc
            continue
        problems.append(
            doc.problem(
                ("id",),
                f"duplicate quest id `{quest_id}` (also in {first.file}:{first.line_of(('id',))})",
                "give each quest its own id",
            )
        )
    return docs, problems


def _map_problems(
    content_map: ContentMap, doc: YamlDocument, quest_ids: Collection[str]
) -> list[Problem]:
    phases = content_map.phases
    problems = duplicate_problems(
        doc, "phase id", ((p.id, ("phases", i, "id")) for i, p in enumerate(phases))
    )
    listed = [
        (quest_id, ("phases", i, "quests", j))
        for i, phase in enumerate(phases)
        for j, quest_id in enumerate(phase.quests)
    ]
    problems += duplicate_problems(
        doc, "map entry", listed, hint="list each quest once; a quest belongs to one phase"
    )
    for quest_id, path in listed:
        if quest_id not in quest_ids:
            problems.append(
                doc.problem(
                    path,
                    f"map lists unknown quest `{quest_id}`",
                    f"add a quest file with id: {quest_id}, or remove it from the map",
                )
            )
    return problems


def _placement_problems(
    quest: Quest, doc: YamlDocument, placed: dict[str, str], phase_ids: set[str]
) -> list[Problem]:
    """The quest must be in the map, under the phase it names."""
    listed_under = placed.get(quest.id)
    if listed_under is None:
        return [
            doc.problem(
                ("id",),
                f"quest `{quest.id}` is not in map.yaml",
                f"add `{quest.id}` to the `quests:` list of phase `{quest.phase}` in map.yaml",
            )
        ]
    if quest.phase in phase_ids and quest.phase != listed_under:
        return [
            doc.problem(
                ("phase",),
                f"quest says phase `{quest.phase}` but map.yaml lists it under `{listed_under}`",
                "make the quest's `phase` and its place in map.yaml agree",
            )
        ]
    return []
