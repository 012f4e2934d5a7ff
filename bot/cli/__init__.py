"""The ``brrrbot`` command line.

Every handler either succeeds or raises a ``UserError`` that ``main`` prints as
one line with exit code 2 (1 where the issue is outside the user's input).
Heavy imports (discord, torch) happen inside the handlers that need them, so
``brrrbot quests check`` and ``brrrbot db ...`` start fast and never load torch.
Each command is one module here that adds its parser and holds its handlers.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from bot.clean_start import restore_environment
from bot.cli import database, grade_file, quest_content, run_bot, run_workers, submit_file
from bot.cli.grade_file import Handler
from bot.config import load_settings, settings_file
from bot.errors import UserError
from bot.logs import configure as configure_logging


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="brrrbot",
        description="A Discord study-group bot with daily quests and sandboxed PyTorch grading.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (run_bot, run_workers, grade_file, submit_file, quest_content, database):
        command.add_parser(commands)
    return parser


class _UsageError(UserError):
    """A command line argparse refused; ``parser`` prints the usage that goes with it."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    """Raises instead of exiting, so that ``brrrbot grade --json`` can answer in JSON."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(self, message)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    wants_json = bool(words) and words[0] in {"grade", "submit"} and "--json" in words
    try:
        args = build_parser().parse_args(words)
        handler: Handler = args.handler
        if grade_file.grades_a_file(args):
            handler = grade_file.forked_grade(args)  # before any setting, file or secret is read
        restore_environment()
        settings = load_settings(settings_file())
        configure_logging(settings.log_level, settings.log_format)
        return handler(args, settings)
    except UserError as exc:
        if wants_json:  # one JSON object on stdout, whatever went wrong with the input
            from bot.worker.local import rejected

            print(rejected(str(exc)))
        if isinstance(exc, _UsageError):
            exc.parser.print_usage(sys.stderr)
            print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)
        else:
            print(f"brrrbot: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `brrrbot quests show X | head`: the reader is gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
