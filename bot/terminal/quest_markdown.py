"""Quests as Markdown for the terminal: the map, one quest, one task's full prompt.

The Discord views (``bot.presentation.quest_embeds``) fit embeds and speak slash commands; a
learner in their own terminal also grades locally, so each build task says both how to
grade it here and how to submit it.  Plain Markdown text: ``brrrbot quests`` renders it
with rich on a terminal and prints it as it is otherwise.
"""

from __future__ import annotations

import re
import textwrap

from bot.content import Content, TaskRef
from bot.content.schema import AnyTask, BuildTask, Quest, QuizTask


def map_text(content: Content) -> str:
    """Every phase with its quests in map order (the daily schedule's order)."""
    lines = ["# The learning map", ""]
    for number, phase in enumerate(content.phases, start=1):
        lines += [f"## Phase {number}: {phase.title}", ""]
        if phase.summary:
            lines += [phase.summary.strip(), ""]
        for quest_id in phase.quests:
            quest = content.quest(quest_id)
            xp = sum(task.xp for task in quest.tasks)
            days = f"{quest.days} days" if quest.days > 1 else "1 day"
            count = len(quest.tasks)
            lines.append(
                f"- **{quest.title}** `{quest.id}`: {count} task{'s' * (count != 1)}, "
                f"{xp} XP, {days}"
            )
        lines.append("")
    lines.append("Read one with `brrrbot quests show QUEST` or `brrrbot quests show QUEST/TASK`.")
    return "\n".join(lines)


def quest_text(content: Content, quest: Quest) -> str:
    """Summary, readings with links and notes, and each task with its XP and how to do it."""
    phase = content.phase_of(quest.id)
    xp = sum(task.xp for task in quest.tasks)
    lines = [f"# {quest.title} (`{quest.id}`)", "", f"*{phase.title}* · {xp} XP", ""]
    lines += [quest.summary.strip(), ""]
    if quest.readings:
        lines += ["## Readings", ""]
        for reading in quest.readings:
            entry = content.library[reading.ref]
            lines.append(f"- **{entry.title}** <{entry.url}>")
            lines.append(f"  {reading.note.strip()}")
        lines.append("")
    lines += ["## Tasks", ""]
    for task in quest.tasks:
        ref = TaskRef(quest.id, task.id)
        lines.append(f"- **{task.title}** `{ref}` ({task.kind}, +{task.xp} XP)")
        lines += [f"  {step}" for step in how_to_complete(quest.id, task).splitlines()]
    lines += ["", f"The full prompt of a task: `brrrbot quests show {quest.id}/TASK`."]
    return "\n".join(lines)


def task_text(quest: Quest, task: AnyTask) -> str:
    """One task's whole prompt, the functions a build must define and how to complete it."""
    ref = TaskRef(quest.id, task.id)
    lines = [f"# {task.title} (`{ref}`)", "", f"{task.kind} · +{task.xp} XP", ""]
    lines += [task.prompt.strip(), ""]
    if isinstance(task, BuildTask):
        lines += ["## Define", ""]
        lines += [f"- `{signature}`" for signature in task.interface]
        lines.append("")
    if isinstance(task, QuizTask):
        lines += ["## Questions", ""]
        lines += [f"{n}. {q.prompt.strip()}" for n, q in enumerate(task.questions, start=1)]
        lines.append("")
    lines.append(how_to_complete(quest.id, task))
    return "\n".join(lines)


def how_to_complete(quest_id: str, task: AnyTask) -> str:
    """Each command on a line of its own, so that wrapping never splits one."""
    ref = TaskRef(quest_id, task.id)
    if isinstance(task, BuildTask):
        return (
            "Grade it here (`--watch` re-grades on every save):\n"
            f"`brrrbot grade FILE --task {ref}`\n"
            f"Then submit it in Discord:\n`/submit task:{ref}`"
        )
    if isinstance(task, QuizTask):
        return f"Answer it in Discord:\n`/answer task:{ref}`"
    return f"Mark it done in Discord:\n`/done task:{ref}`"


def plain(markdown: str, width: int = 80) -> str:
    """``markdown`` for a pipe or a file: long lines wrapped to ``width`` (a list item's
    continuation indented under its text), fenced code and tables left as they are."""
    out: list[str] = []
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or len(line) <= width or line.lstrip().startswith("|"):
            out.append(line)
            continue
        marker = re.match(r"\s*(?:[-*] |\d+\. )?", line)
        indent = " " * (marker.end() if marker else 0)
        out.append(
            textwrap.fill(
                line,
                width,
                subsequent_indent=indent,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n".join(out)
