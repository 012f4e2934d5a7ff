"""``brrrbot run``: the Discord bot, with its local worker pool beside it."""

from __future__ import annotations

import argparse

from bot.config import Settings


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run",
        help="run the Discord bot (and a local worker pool)",
        description="Apply pending migrations, load the quest map and run the bot. "
        "Starts WORKERS local grading workers beside it unless --no-workers is given.",
    )
    run.add_argument("--no-workers", action="store_true", help="do not start local workers")
    run.set_defaults(handler=run_bot)


def run_bot(args: argparse.Namespace, settings: Settings) -> int:
    from bot.runner import run

    return run(settings, local_workers=0 if args.no_workers else settings.workers)
