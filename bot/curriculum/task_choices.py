"""The build tasks offered when a member submits a message: today's quest's first.

A select menu holds at most 25 options (values of at most 100 characters); the rest of the
map follows today's tasks in map order, and what does not fit is left to ``/submit``.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.content import AnyTask, Quest
from bot.curriculum.guild_map import GuildMap

MAX_OPTIONS = 25  # Discord's limit for one select menu
MAX_VALUE = 100  # an option's value is the task's ref


@dataclass(frozen=True)
class TaskChoice:
    ref: str  # QUEST/TASK
    task: AnyTask
    today: bool  # a task of today's quest


@dataclass(frozen=True)
class TaskMenu:
    choices: list[TaskChoice]  # at most MAX_OPTIONS
    left_out: int  # build tasks that did not fit: the member can still reach them with /submit


def build_task_menu(guild_map: GuildMap, today: Quest | None) -> TaskMenu:
    """The map's build tasks, today's quest's first, then in map order."""
    today_id = today.id if today else None
    builds = [
        TaskChoice(ref, task, quest.id == today_id)
        for ref, quest, task in guild_map.tasks()
        if task.kind == "build"
    ]
    builds.sort(key=lambda choice: not choice.today)  # stable: map order within each group
    shown = [choice for choice in builds if len(choice.ref) <= MAX_VALUE][:MAX_OPTIONS]
    return TaskMenu(shown, len(builds) - len(shown))
