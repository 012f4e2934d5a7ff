"""Validate one quest file against loaded content, for ``/admin quest-add``.

Pure: nothing is written.  The caller decides what to do when the id already
exists (``quest.id in content.quests_by_id``): replacing a quest is allowed.
"""

from __future__ import annotations

from bot.content.catalogue import Content
from bot.content.crossref import cycle_problem, prerequisite_cycles, quest_problems
from bot.content.documents import load_text
from bot.content.problems import Problem, sort_problems
from bot.content.schema import Quest


def check_quest_text(
    text: str, filename: str, content: Content
) -> tuple[Quest | None, list[Problem]]:
    """The quest in ``text`` if it is valid against ``content``, and its problems.

    Same schema and messages as the directory check; its phase must exist and
    its readings, grader and prerequisite must resolve.  A prerequisite loop is
    looked for with this quest in place of any existing quest of the same id.
    """
    loaded = load_text(text, filename, Quest)
    quest, doc = loaded.model, loaded.doc
    if quest is None or doc is None:
        return None, sort_problems(loaded.problems)
    problems = quest_problems(
        quest,
        doc,
        library_ids=content.library.keys(),
        quest_ids=content.quests_by_id.keys() | {quest.id},
        phase_ids={phase.id for phase in content.phases},
    )
    prerequisites = {q.id: q.prerequisite for q in content.quests}
    prerequisites[quest.id] = quest.prerequisite
    problems += [
        cycle_problem(doc, cycle)
        for cycle in prerequisite_cycles(prerequisites)
        if quest.id in cycle
    ]
    return (None if problems else quest), sort_problems(problems)
