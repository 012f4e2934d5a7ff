"""``brrrbot submit``: upload a file to the bot's API and wait for its verdict."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.config import FIX_HINTS, Settings
from bot.errors import UserError


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    submit = commands.add_parser(
        "submit",
        help="submit a file to the bot from a terminal and wait for the verdict",
        description="Upload FILE for QUEST/TASK to the bot at BRRRBOT_URL with your token "
        "BRRRBOT_TOKEN (/token new), wait for the verdict and print it like `brrrbot grade`. "
        "Exit code 0 passed, 1 failed, 2 bad input, refused or internal error.",
    )
    submit.add_argument("file", type=Path, help="a .py or .ipynb file")
    submit.add_argument(
        "--task", metavar="QUEST/TASK", required=True, help="e.g. go-brrrr/matmul-three-ways"
    )
    submit.add_argument("--json", action="store_true", help="print one JSON object")
    submit.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="how long to wait for the verdict (default 300 s)",
    )
    submit.set_defaults(handler=submit_file)


def submit_file(args: argparse.Namespace, settings: Settings) -> int:
    from bot.cli.api_client import Client, submit_command

    if settings.brrrbot_url is None or settings.brrrbot_token is None:
        missing = "BRRRBOT_URL" if settings.brrrbot_url is None else "BRRRBOT_TOKEN"
        raise UserError(f"{missing} is not set: {FIX_HINTS[missing]}")
    if not args.timeout > 0:
        raise UserError(f"--timeout must be a number of seconds above 0, not {args.timeout:g}")
    client = Client(settings.brrrbot_url, settings.brrrbot_token.get_secret_value())
    return submit_command(client, args.file, args.task, as_json=args.json, timeout_s=args.timeout)
