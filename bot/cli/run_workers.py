"""``brrrbot worker``: a pool of grading workers (``--check``: the isolation report)."""

from __future__ import annotations

import argparse

from bot.config import Settings
from bot.errors import UserError


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worker = commands.add_parser(
        "worker",
        help="run a pool of grading workers",
        description="Claim grading jobs from the database and grade them in the sandbox.",
    )
    worker.add_argument("--check", action="store_true", help="print the isolation report and exit")
    worker.add_argument(
        "--insecure-sandbox",
        action="store_true",
        help="grade even when the minimum isolation cannot be had (development only)",
    )
    worker.add_argument(
        "--count",
        type=_worker_count,
        metavar="N",
        help="number of worker processes, 1 to 64 (default: WORKERS)",
    )
    worker.set_defaults(handler=run_workers)


def run_workers(args: argparse.Namespace, settings: Settings) -> int:
    from bot.worker import pool

    if args.check:
        return pool.check(settings)
    count = settings.workers if args.count is None else args.count
    if count < 1:
        raise UserError("WORKERS is 0 (no local workers): pass --count N to start N workers")
    return pool.run_pool(settings, count, insecure=args.insecure_sandbox)


def _worker_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"{value} is outside 1..64")
    return value
