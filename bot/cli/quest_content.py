"""``brrrbot quests``: check quest content, read the map and a quest's tasks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.config import Settings
from bot.errors import UserError


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    quests = commands.add_parser("quests", help="work with quest content")
    quest_commands = quests.add_subparsers(dest="quests_command", required=True, metavar="ACTION")
    check = quest_commands.add_parser(
        "check",
        help="validate quest YAML, the library and the map",
        description="Validate every file and cross-reference; print each problem as "
        "file:line: message. Exit 0 when clean, 1 otherwise.",
    )
    check.add_argument(
        "dir",
        nargs="?",
        type=Path,
        help="content directory (default: QUESTS_DIR, else ./quests, else the shipped quests)",
    )
    check.set_defaults(handler=_cmd_quests_check)
    listing = quest_commands.add_parser(
        "list",
        help="show the learning map",
        description="Every phase with its quests in the order the daily posts follow.",
    )
    listing.set_defaults(handler=_cmd_quests_list)
    show = quest_commands.add_parser(
        "show",
        help="read a quest, or one task's full prompt",
        description="Render a quest (summary, readings, tasks with XP and how to complete "
        "each) or, for QUEST/TASK, the task's whole prompt. Plain text when not a terminal.",
    )
    show.add_argument(
        "ref", metavar="QUEST[/TASK]", help="e.g. go-brrrr or go-brrrr/matmul-three-ways"
    )
    show.set_defaults(handler=_cmd_quests_show)


def _cmd_quests_check(args: argparse.Namespace, settings: Settings) -> int:
    from bot.content import check_content
    from bot.content.location import content_directory

    directory: Path = args.dir or content_directory(settings.quests_dir)
    problems = check_content(directory)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) in {directory}", file=sys.stderr)
        return 1
    print(f"{directory}: content is valid")
    return 0


def _cmd_quests_list(args: argparse.Namespace, settings: Settings) -> int:
    from bot.startup import load_content_or_fail
    from bot.terminal.quest_markdown import map_text

    _print_markdown(map_text(load_content_or_fail(settings)))
    return 0


def _cmd_quests_show(args: argparse.Namespace, settings: Settings) -> int:
    from bot.content import BadTaskRef, TaskRef
    from bot.startup import load_content_or_fail
    from bot.terminal.quest_markdown import quest_text, task_text

    content = load_content_or_fail(settings)
    wanted = args.ref.removesuffix("/")  # QUEST/ is the quest, as QUEST is
    is_task = "/" in wanted
    try:
        if is_task:
            quest, task = content.find_task(TaskRef.parse(wanted))
            text = task_text(quest, task)
        else:
            text = quest_text(content, content.quest(wanted))
    except (BadTaskRef, KeyError):
        known = ", ".join(q.id for q in content.quests)
        what = f"task {args.ref!r}" if is_task else f"quest {wanted!r}"
        raise UserError(
            f"no {what}; quests: {known} (`brrrbot quests show QUEST` lists a quest's tasks)"
        ) from None
    _print_markdown(text)
    return 0


def _print_markdown(text: str) -> None:
    """Rendered with rich on a terminal (at most 100 columns wide), as it is otherwise."""
    if not sys.stdout.isatty():
        from bot.terminal.quest_markdown import plain

        print(plain(text))
        return
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console()
    console.width = min(console.width, 100)
    console.print(Markdown(text, hyperlinks=False))
