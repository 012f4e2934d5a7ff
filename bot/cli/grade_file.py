"""``brrrbot grade``: grade a local file through the real sandbox, as a worker would."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bot.config import Settings
from bot.errors import UserError

if TYPE_CHECKING:
    from sandbox import Zygote

Handler = Callable[[argparse.Namespace, Settings], int]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    grade = commands.add_parser(
        "grade",
        help="grade a file locally through the real sandbox",
        description="Grade FILE for QUEST/TASK exactly as a worker would and print the verdict. "
        "Exit code 0 passed, 1 failed, 2 bad input or internal error.",
    )
    grade.add_argument("file", nargs="?", type=Path, help="a .py or .ipynb file")
    grade.add_argument("--task", metavar="QUEST/TASK", help="e.g. go-brrrr/matmul-three-ways")
    grade.add_argument(
        "--json", action="store_true", help="print one JSON object (one per line with --watch)"
    )
    grade.add_argument(
        "--watch",
        action="store_true",
        help="keep the sandbox warm and grade again on every save (Ctrl-C stops)",
    )
    grade.add_argument(
        "--no-trial",
        action="store_true",
        help="skip the speed trial of a speed-ranked task (the verdict says so)",
    )
    grade.add_argument(
        "--profile",
        action="store_true",
        help="after a speed-ranked task's trial, profile the function too: the verdict names "
        "its bound and a roofline picture is written next to FILE",
    )
    grade.add_argument("--list", action="store_true", help="list the gradable tasks")
    grade.add_argument(
        "--seed",
        type=_seed,
        metavar="N",
        help="replay the draw a verdict named (default: a fresh one)",
    )
    grade.add_argument(
        "--insecure-sandbox", action="store_true", help="grade without the minimum isolation"
    )
    grade.set_defaults(handler=grade_file)


def _seed(text: str) -> int:
    """A draw's seed as verdicts print it: a whole number in 0..2**63 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"{value} is outside 0..2**63 - 1")
    return value


def grades_a_file(args: argparse.Namespace) -> bool:
    return bool(args.handler is grade_file and not args.list and args.file and args.task)


def forked_grade(args: argparse.Namespace) -> Handler:
    """``brrrbot grade`` with its sandbox launched now, so that it warms up while the
    content loads, and forked (where it may be: ``local.launch_sandbox``) from a process
    that has read no setting and no file, and whose environment ``bot.clean_start`` held
    back."""
    from bot.worker import local

    trial = not (args.watch or args.no_trial or args.list)
    sandbox = local.launch_sandbox(huge_pages=args.watch, partner=trial)

    def handler(args: argparse.Namespace, settings: Settings) -> int:
        return grade_file(args, settings, sandbox)

    return handler


def grade_file(args: argparse.Namespace, settings: Settings, sandbox: Zygote | None = None) -> int:
    from bot.startup import load_content_or_fail
    from bot.worker import local

    if args.list:
        print(local.list_tasks(load_content_or_fail(settings)))
        return 0
    if args.file is None or args.task is None or sandbox is None:
        raise UserError(
            "usage: brrrbot grade FILE --task QUEST/TASK [--seed N] [--json] [--watch] "
            "[--no-trial] [--profile] (or --list)"
        )
    if args.profile and (args.no_trial or args.watch):
        raise UserError(
            "--profile profiles a speed trial's function, so it needs the trial: drop "
            f"{'--no-trial' if args.no_trial else '--watch'}"
        )
    code = local.grade_command(
        settings,
        sandbox,
        args.file,
        args.task,
        insecure=args.insecure_sandbox,
        seed=args.seed,
        as_json=args.json,
        watch=args.watch,
        trial=not args.no_trial,
        profile=args.profile,
    )
    # Done: the sandbox is closed and the verdict printed.  Tearing down an interpreter that
    # imported torch takes half a second and frees nothing the kernel would not.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
