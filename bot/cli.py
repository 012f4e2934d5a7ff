"""The ``brrrbot`` command line.

Every handler either succeeds or raises a ``UserError`` that ``main`` prints as
one line with exit code 2 (1 where the issue is outside the user's input).
Heavy imports (discord, torch) happen inside the handlers that need them, so
``brrrbot quests check`` and ``brrrbot db ...`` start fast and never load torch.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from bot.clean_start import restore_environment
from bot.config import DEFAULT_DATABASE_URL, FIX_HINTS, Settings, load_settings, settings_file
from bot.errors import UserError
from bot.logs import configure as configure_logging

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from bot.sandbox import Zygote

Handler = Callable[[argparse.Namespace, Settings], int]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="brrrbot",
        description="A Discord study-group bot with daily quests and sandboxed PyTorch grading.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run the Discord bot (and a local worker pool)",
        description="Apply pending migrations, load the quest map and run the bot. "
        "Starts WORKERS local grading workers beside it unless --no-workers is given.",
    )
    run.add_argument("--no-workers", action="store_true", help="do not start local workers")
    run.set_defaults(handler=_cmd_run)

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
    worker.set_defaults(handler=_cmd_worker)

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
    grade.set_defaults(handler=_cmd_grade)

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
    submit.set_defaults(handler=_cmd_submit)

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

    db = commands.add_parser("db", help="database migrations")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    upgrade = db_commands.add_parser(
        "upgrade",
        help="apply pending migrations",
        description="Create the database if needed and migrate it to the newest schema. "
        "The directory of a SQLite DATABASE_URL must exist unless --create-dir is given "
        "(the default ./data is created).",
    )
    upgrade.add_argument(
        "--create-dir",
        action="store_true",
        help="create the directory of DATABASE_URL's SQLite file when it is missing",
    )
    upgrade.set_defaults(handler=_cmd_db_upgrade)
    current = db_commands.add_parser(
        "current",
        help="show the applied migration",
        description="Print the applied revision and whether it is the newest.",
    )
    current.set_defaults(handler=_cmd_db_current)
    verify = db_commands.add_parser(
        "verify",
        help="check the database's invariants",
        description="Check that the schema is at head, every stored XP total equals its "
        "ledger sum, no task was paid twice and no job waits on the lease of a worker that "
        "is gone. Exit 0 when consistent, 1 with one line per problem.",
    )
    verify.set_defaults(handler=_cmd_db_verify)
    role = db_commands.add_parser(
        "worker-role",
        help="create a least-privilege PostgreSQL role for remote workers",
        description="Run with an owner's DATABASE_URL. Creates (or updates) a LOGIN role that "
        "can only claim jobs, heartbeat, read the submission being graded and write its "
        "verdict. The password is read from the environment variable named by --password-env.",
    )
    role.add_argument("name", help="the role name, e.g. brrrbot_worker")
    role.add_argument(
        "--password-env",
        default="WORKER_DB_PASSWORD",
        metavar="VAR",
        help="environment variable holding the role's password (default: WORKER_DB_PASSWORD)",
    )
    role.set_defaults(handler=_cmd_db_worker_role)
    backup = db_commands.add_parser(
        "backup",
        help="copy the live SQLite database into FILE",
        description="Take a consistent snapshot of the SQLite database while the bot and "
        "workers go on writing, check it and print what it holds. On PostgreSQL, print the "
        "pg_dump command to run instead (exit 2). Exit 0 written, 1 failed, 2 bad input.",
    )
    backup.add_argument("file", type=Path, metavar="FILE", help="the backup to write (0600)")
    backup.add_argument("--force", action="store_true", help="replace FILE if it exists")
    backup.set_defaults(handler=_cmd_db_backup)
    restore = db_commands.add_parser(
        "restore",
        help="replace the SQLite database with a backup",
        description="Check FILE, migrate a copy of it to the newest schema and put it in the "
        "database's place. Refuses while the bot or a worker uses the database. The replaced "
        "database is kept as DATABASE.before-restore-TIMESTAMP unless --no-keep is given. On "
        "PostgreSQL, print the pg_restore command to run instead (exit 2).",
    )
    restore.add_argument(
        "file", type=Path, metavar="FILE", help="a file written by brrrbot db backup"
    )
    restore.add_argument("--no-keep", action="store_true", help="do not keep the replaced database")
    restore.set_defaults(handler=_cmd_db_restore)
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
        if _grades_a_file(args):
            handler = _forked_grade(args)  # before any setting, file or secret is read
        restore_environment()
        settings = load_settings(settings_file())
        configure_logging(settings.log_level, settings.log_format)
        return handler(args, settings)
    except UserError as exc:
        if wants_json:  # one JSON object on stdout, whatever went wrong with the input
            from bot.grading.local import rejected

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
    from bot.terminal.quests import map_text

    _print_markdown(map_text(load_content_or_fail(settings)))
    return 0


def _cmd_quests_show(args: argparse.Namespace, settings: Settings) -> int:
    from bot.startup import load_content_or_fail
    from bot.terminal.quests import quest_text, task_text

    content = load_content_or_fail(settings)
    quest_id, _, task_id = args.ref.partition("/")
    try:
        quest = content.quest(quest_id)
        text = task_text(quest, quest.task(task_id)) if task_id else quest_text(content, quest)
    except KeyError:
        known = ", ".join(q.id for q in content.quests)
        what = f"task {args.ref!r}" if task_id else f"quest {quest_id!r}"
        raise UserError(
            f"no {what}; quests: {known} (`brrrbot quests show QUEST` lists a quest's tasks)"
        ) from None
    _print_markdown(text)
    return 0


def _print_markdown(text: str) -> None:
    """Rendered with rich on a terminal (at most 100 columns wide), as it is otherwise."""
    if not sys.stdout.isatty():
        from bot.terminal.quests import plain

        print(plain(text))
        return
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console()
    console.width = min(console.width, 100)
    console.print(Markdown(text, hyperlinks=False))


def _cmd_db_upgrade(args: argparse.Namespace, settings: Settings) -> int:
    from bot.db.engine import parse_url, sqlite_path
    from bot.db.setup import upgrade_database

    # A mistyped DATABASE_URL must not migrate a new, empty database beside the real one;
    # the default's own ./data directory is ours to create.
    path = sqlite_path(parse_url(settings.database_url.get_secret_value()))
    chosen = settings.database_url.get_secret_value() != DEFAULT_DATABASE_URL
    if path is not None and chosen and not args.create_dir and not path.parent.is_dir():
        raise UserError(
            f"DATABASE_URL: the directory {path.parent} does not exist; check the path, or "
            "pass --create-dir to create it"
        )
    revision = asyncio.run(upgrade_database(settings.database_url.get_secret_value()))
    print(f"database is at revision {revision} (head)")
    return 0


def _cmd_db_worker_role(args: argparse.Namespace, settings: Settings) -> int:
    from bot.db.setup import grant_worker_role

    password = os.environ.get(args.password_env, "")
    if not password:
        raise UserError(
            f"{args.password_env} is not set: export the worker's password in it "
            "(at least 12 characters), then run this again"
        )
    created = asyncio.run(
        grant_worker_role(settings.database_url.get_secret_value(), args.name, password)
    )
    print(
        f"{'created' if created else 'updated'} role {args.name}; on worker hosts set "
        f"DATABASE_URL=postgresql+asyncpg://{args.name}:<password>@<host>/<database>"
    )
    return 0


def _cmd_db_current(args: argparse.Namespace, settings: Settings) -> int:
    from bot.db.setup import describe_revision

    print(asyncio.run(describe_revision(settings.database_url.get_secret_value())))
    return 0


def _cmd_db_backup(args: argparse.Namespace, settings: Settings) -> int:
    from bot.db.backup import backup, postgres_backup_command

    database = _sqlite_database(settings, postgres_backup_command, args.file)
    if database is None:
        return 2
    snapshot = backup(database, args.file, force=args.force)
    print(
        f"wrote {snapshot.path}: {_size(snapshot.size_bytes)}, revision {snapshot.revision}, "
        f"{snapshot.ledger_rows} XP ledger rows, {snapshot.submissions} submissions"
    )
    return 0


def _cmd_db_restore(args: argparse.Namespace, settings: Settings) -> int:
    from bot.db.backup import postgres_restore_command, restore
    from bot.db.types import utcnow

    database = _sqlite_database(settings, postgres_restore_command, args.file)
    if database is None:
        return 2
    restored = restore(args.file, database, now=utcnow(), keep=not args.no_keep)
    snapshot = restored.snapshot
    migrated = (
        f" (migrated from {restored.from_revision})"
        if restored.from_revision != snapshot.revision
        else ""
    )
    print(
        f"restored {args.file} into {database}: revision {snapshot.revision}{migrated}, "
        f"{snapshot.ledger_rows} XP ledger rows, {snapshot.submissions} submissions"
    )
    if restored.kept is not None:
        print(f"the replaced database is kept as {restored.kept}")
    return 0


def _sqlite_database(
    settings: Settings, postgres_command: Callable[[URL, Path], str], file: Path
) -> Path | None:
    """DATABASE_URL's SQLite file; None after printing the command to run for PostgreSQL."""
    from bot.db.engine import parse_url, sqlite_path

    url = parse_url(settings.database_url.get_secret_value())
    if url.get_backend_name() == "postgresql":
        print(
            "brrrbot does not copy a PostgreSQL database itself; with the bot and workers "
            "stopped for a restore, run:\n"
            f"  {postgres_command(url, file)}\n"
            "giving the password in PGPASSWORD or ~/.pgpass, never on the command line"
        )
        return None
    path = sqlite_path(url)
    if path is None:
        raise UserError(f"DATABASE_URL {url.render_as_string()} has no file to copy")
    return path


def _size(size_bytes: int) -> str:
    if size_bytes < 1024 * 1024:
        return f"{size_bytes / 1024:.1f} KiB"
    return f"{size_bytes / 1024 / 1024:.1f} MiB"


def _cmd_db_verify(args: argparse.Namespace, settings: Settings) -> int:
    from bot.db.verify import verify_database

    problems = asyncio.run(
        verify_database(settings.database_url.get_secret_value(), settings.lease_seconds)
    )
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) in the database", file=sys.stderr)
        return 1
    print("database is consistent")
    return 0


def _cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from bot.runner import run

    return run(settings, local_workers=0 if args.no_workers else settings.workers)


def _cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from bot.grading import pool

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


def _seed(text: str) -> int:
    """A draw's seed as verdicts print it: a whole number in 0..2**63 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"{value} is outside 0..2**63 - 1")
    return value


def _cmd_submit(args: argparse.Namespace, settings: Settings) -> int:
    from bot.api.client import Client, submit_command

    if settings.brrrbot_url is None or settings.brrrbot_token is None:
        missing = "BRRRBOT_URL" if settings.brrrbot_url is None else "BRRRBOT_TOKEN"
        raise UserError(f"{missing} is not set: {FIX_HINTS[missing]}")
    if not args.timeout > 0:
        raise UserError(f"--timeout must be a number of seconds above 0, not {args.timeout:g}")
    client = Client(settings.brrrbot_url, settings.brrrbot_token.get_secret_value())
    return submit_command(client, args.file, args.task, as_json=args.json, timeout_s=args.timeout)


def _grades_a_file(args: argparse.Namespace) -> bool:
    return bool(args.handler is _cmd_grade and not args.list and args.file and args.task)


def _forked_grade(args: argparse.Namespace) -> Handler:
    """``brrrbot grade`` with its sandbox launched now, so that it warms up while the
    content loads, and forked (where it may be: ``local.launch_sandbox``) from a process
    that has read no setting and no file, and whose environment ``bot.clean_start`` held
    back."""
    from bot.grading import local

    trial = not (args.watch or args.no_trial or args.list)
    sandbox = local.launch_sandbox(huge_pages=args.watch, partner=trial)

    def handler(args: argparse.Namespace, settings: Settings) -> int:
        return _cmd_grade(args, settings, sandbox)

    return handler


def _cmd_grade(args: argparse.Namespace, settings: Settings, sandbox: Zygote | None = None) -> int:
    from bot.grading import local
    from bot.startup import load_content_or_fail

    if args.list:
        print(local.list_tasks(load_content_or_fail(settings)))
        return 0
    if args.file is None or args.task is None or sandbox is None:
        raise UserError(
            "usage: brrrbot grade FILE --task QUEST/TASK [--seed N] [--json] [--watch] "
            "[--no-trial] (or --list)"
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
    )
    # Done: the sandbox is closed and the verdict printed.  Tearing down an interpreter that
    # imported torch takes half a second and frees nothing the kernel would not.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
