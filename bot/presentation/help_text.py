"""``/help`` as embeds: today's quest and how to complete each task, then the commands.

The command lines come from the bot's live command tree (the cog turns it into
``CommandHelp``), so a new command shows up here without anyone editing this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from discord import Embed

from bot.content.refs import TaskRef
from bot.content.schema import AnyTask, Quest
from bot.presentation import style
from bot.presentation.limits import fit_embed, section_embeds, truncate
from bot.presentation.safety import no_pings

#: a command's one line is kept short enough to read at a glance
LINE = 160


@dataclass(frozen=True)
class CommandHelp:
    """One command as ``/help`` lists it."""

    name: str  # qualified: "leaderboard", "privacy hide", "Submit solution"
    description: str = ""  # context menus have none
    options: tuple[str, ...] = ()  # in order; optional ones in brackets: ("task", "[period]")
    menu: Literal["message", "user"] | None = None  # a context-menu command, not a slash command


@dataclass(frozen=True)
class Today:
    """What the daily post shows today: ``quest`` None before setup or with an empty map."""

    configured: bool  # a moderator ran /admin setup (the daily post has a channel)
    quest: Quest | None


def help_embeds(
    today: Today,
    learner: Sequence[CommandHelp],
    moderator: Sequence[CommandHelp] | None = None,
    *,
    submit_menu: str | None = None,
) -> list[Embed]:
    """Today's quest, the learner commands and, given (for moderators only), theirs.

    ``submit_menu`` names the message command that submits a solution, when the bot has one.
    """
    embeds = [_today_embed(today, submit_menu)]
    embeds += section_embeds(
        [command_line(command) for command in learner], title="🧭 Commands", colour=style.QUEST
    )
    if moderator is not None:
        embeds += section_embeds(
            [command_line(command) for command in moderator],
            title="🛠️ Moderator commands",
            colour=style.MAP,
            empty="No moderator commands.",
        )
    return [fit_embed(embed) for embed in embeds]


def command_line(command: CommandHelp) -> str:
    """``/leaderboard [period]`` · what it does; a context menu says where to find it."""
    if command.menu is not None:
        target = "message" if command.menu == "message" else "member"
        usage = f"**{command.name}**"
        what = command.description or (
            f"on a {target}: right-click it (long-press on a phone) → Apps → {command.name}"
        )
    else:
        usage = "`" + " ".join(["/" + command.name, *command.options]) + "`"
        what = command.description
    return truncate(no_pings(f"{usage} · {what}" if what else usage), LINE)


def _today_embed(today: Today, submit_menu: str | None) -> Embed:
    if not today.configured:
        return Embed(
            title="📍 Today's quest",
            description=(
                "No daily quest yet: a moderator starts the daily posts with `/admin setup`. "
                "Until then, `/quests` shows the learning map."
            ),
            colour=style.QUEST,
        )
    if today.quest is None:
        return Embed(
            title="📍 Today's quest",
            description=(
                "This server's map has no quests enabled: "
                "a moderator can add one with `/admin quest-add`."
            ),
            colour=style.QUEST,
        )
    quest = today.quest
    lines = [
        f"**{task.title}** · {task.kind} · {task.xp} XP\n{how_to(quest.id, task, submit_menu)}"
        for task in quest.tasks
    ]
    lines.append("`/today` shows the readings and each task's whole prompt.")
    return Embed(
        title=truncate(f"📍 Today's quest: {quest.title}", 256),
        description=no_pings("\n\n".join(lines)),
        colour=style.QUEST,
    )


def how_to(quest_id: str, task: AnyTask, submit_menu: str | None = None) -> str:
    """How a task is completed, by its kind."""
    ref = TaskRef(quest_id, task.id)
    if task.kind == "build":
        way = f"Submit your `.py` or `.ipynb` file with `/submit task:{ref}`"
        if submit_menu:
            way += f", or use **{submit_menu}** on a message with your code (Apps menu)"
        return way + "."
    if task.kind == "quiz":
        return f"Answer with `/answer task:{ref}`."
    return f"Once done, mark it with `/done task:{ref}`."
