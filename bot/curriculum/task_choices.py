"""The build tasks offered when a member submits a message (today's quest's first), and the
tasks that have a speed board.

A select menu holds at most 25 options (values of at most 100 characters); the rest of the
map follows today's tasks in map order, and what does not fit is left to ``/submit``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.content import AnyTask, Quest
from bot.curriculum.guild_map import GuildMap
from bot.progress.speed_results import is_speed_ranked

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


def speed_boards(guild_map: GuildMap, with_results: Iterable[str]) -> list[tuple[str, str | None]]:
    """The tasks that have a speed board, as ``(ref, title)``: the map's speed-ranked tasks in
    map order, then any other task with results (one the map no longer has: title None)."""
    titles = {ref: task.title for ref, _, task in guild_map.tasks()}
    ranked = [ref for ref, _, task in guild_map.tasks() if is_speed_ranked(task)]
    refs = dict.fromkeys([*ranked, *sorted(with_results)])
    return [(ref, titles.get(ref)) for ref in refs]
