"""Quests as embeds: the daily post / ``/quest`` view and the learning map.

A quest (summary, readings with notes, task prompts) is longer than one embed, so each builder
returns a list of embeds, each valid on its own; send them with ``limits.batch_embeds``, which
groups them into as few messages as Discord allows.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from discord import Embed

from bot.content.refs import TaskRef
from bot.content.schema import AnyTask, BuildTask, LibraryEntry, Quest, QuizTask
from bot.presentation import style
from bot.presentation.limits import AUTHOR_NAME, fit_embed, paginate, section_embeds, truncate
from bot.presentation.markdown import one_block, reflow
from bot.presentation.readings import reading_line
from bot.presentation.safety import no_pings
from bot.presentation.wording import plural

DONE = "✅"
NOT_YET = "◻️"
TODAY = "📍"


def how_to(quest_id: str, task: AnyTask) -> str:
    """The command that completes ``task``, with what a build submission must define."""
    ref = TaskRef(quest_id, task.id)
    if isinstance(task, BuildTask):
        functions = ", ".join(f"`{signature}`" for signature in task.interface)
        return (
            f"Submit with `/submit task:{ref}` and a `.py` or `.ipynb` file "
            f"that defines {functions}."
        )
    if isinstance(task, QuizTask):
        return f"Answer with `/answer task:{ref}`."
    return f"Mark it done with `/done task:{ref}`."


def quest_embeds(
    quest: Quest,
    *,
    phase_title: str,
    library: Mapping[str, LibraryEntry],
    earned: Mapping[str, int] | None = None,
    heading: str | None = None,
) -> list[Embed]:
    """The whole quest: summary and facts, readings, then tasks with how to complete each.

    ``earned`` maps ``QUEST/TASK`` to the XP the caller has earned on it; given, each task is
    marked done or not and the first embed sums up the caller's progress.  ``heading`` (e.g.
    "Today's quest") goes above the title.
    """
    summary = paginate(map(no_pings, reflow(quest.summary))) or [""]
    overview = Embed(title=no_pings(quest.title), description=summary[0], colour=style.QUEST)
    if heading:
        overview.set_author(name=truncate(no_pings(heading), AUTHOR_NAME))
    total = sum(task.xp for task in quest.tasks)
    overview.add_field(name="Phase", value=no_pings(phase_title))
    overview.add_field(name="Length", value=plural(quest.days, "day"))
    overview.add_field(name="Rewards", value=f"{plural(len(quest.tasks), 'task')} · {total} XP")
    if quest.prerequisite:
        overview.add_field(name="Do first", value=f"`{quest.prerequisite}`")
    if earned is not None:
        overview.add_field(name="Your progress", value=_progress(quest, earned), inline=False)
    overview.set_footer(text=f"Quest {quest.id}")
    rest = [Embed(description=page, colour=style.QUEST) for page in summary[1:]]
    readings = section_embeds(
        [line for reading in quest.readings for line in (reading_line(reading, library), "")],
        title="📚 Readings",
        colour=style.QUEST,
        empty="No readings for this quest.",
    )
    tasks = section_embeds(
        [no_pings(line) for task in quest.tasks for line in _task_lines(quest.id, task, earned)],
        title="🎯 Tasks",
        colour=style.QUEST,
    )
    return [fit_embed(embed) for embed in (overview, *rest, *readings, *tasks)]


def _earned(quest_id: str, task: AnyTask, earned: Mapping[str, int]) -> int:
    return earned.get(str(TaskRef(quest_id, task.id)), 0)


def _progress(quest: Quest, earned: Mapping[str, int]) -> str:
    done = sum(1 for task in quest.tasks if _earned(quest.id, task, earned) > 0)
    xp = sum(_earned(quest.id, task, earned) for task in quest.tasks)
    total = sum(task.xp for task in quest.tasks)
    mark = DONE if done == len(quest.tasks) else NOT_YET
    return f"{mark} {done} of {plural(len(quest.tasks), 'task')} done · {xp} of {total} XP"


def _task_lines(quest_id: str, task: AnyTask, earned: Mapping[str, int] | None) -> list[str]:
    """A task's heading (with the caller's mark), prompt, quiz questions and how to complete it.
    A task counts as done once it paid any XP; a partial quiz score shows what it paid."""
    xp = f"{task.xp} XP"
    mark = ""
    if earned is not None:
        got = _earned(quest_id, task, earned)
        mark = f"{DONE if got > 0 else NOT_YET} "
        if 0 < got < task.xp:
            xp = f"{got} of {task.xp} XP"
    lines = [f"{mark}**{task.title}** · {task.kind} · {xp}", *reflow(task.prompt)]
    if isinstance(task, QuizTask):
        lines += [
            f"{number}. {one_block(question.prompt)}"
            for number, question in enumerate(task.questions, start=1)
        ]
    return [*lines, f"➡️ {how_to(quest_id, task)}", ""]


def map_embeds(
    phases: Sequence[tuple[str, Sequence[Quest]]],
    completed_quests: Collection[str],
    today_quest_id: str | None,
) -> list[Embed]:
    """``/map``: each phase's quests in order, marked completed or not, with today's quest
    pointed out (``GuildMap.phases()`` gives ``phases``)."""
    quests = [quest for _, phase_quests in phases for quest in phase_quests]
    if not quests:
        return [Embed(title="🗺️ Learning map", description="No quests yet.", colour=style.MAP)]
    embeds: list[Embed] = []
    for number, (title, phase_quests) in enumerate(phases, start=1):
        lines = [
            _map_line(quest, quest.id in completed_quests, quest.id == today_quest_id)
            for quest in phase_quests
        ]
        embeds += section_embeds(
            map(no_pings, lines), title=f"Phase {number}: {no_pings(title)}", colour=style.MAP
        )
    done = sum(1 for quest in quests if quest.id in completed_quests)
    embeds[0].set_author(name=f"🗺️ Learning map · {done} of {plural(len(quests), 'quest')} done")
    embeds[-1].set_footer(text=f"{DONE} completed · {NOT_YET} not yet · {TODAY} today's quest")
    return embeds


def _map_line(quest: Quest, completed: bool, today: bool) -> str:
    xp = sum(task.xp for task in quest.tasks)
    line = (
        f"{DONE if completed else NOT_YET} **{quest.title}** `{quest.id}` · "
        f"{plural(len(quest.tasks), 'task')} · {xp} XP"
    )
    return f"{line} · {TODAY} today" if today else line
