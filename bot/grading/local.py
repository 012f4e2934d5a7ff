"""``brrrbot grade``: grade a local file through the same sandbox and grader as a worker.

The file becomes a ``JobSpec`` built from the local content, exactly as ``/submit`` builds one
from a server's map, and is graded by the worker's own ``grade_prepared``.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import NoReturn

from bot.config import Settings
from bot.content import Content
from bot.content.schema import BuildTask
from bot.db.engine import parse_url
from bot.errors import UserError
from bot.grading.file_watch import FileWatch
from bot.grading.job_spec import JobSpec
from bot.grading.service import grade_prepared
from bot.grading.submission_input import SubmissionRejected, validate_submission
from bot.sandbox import Zygote, minimum_ok
from graders.base import Verdict

EXIT_CODES = {"passed": 0, "failed": 1, "error": 2}


def gradable_tasks(content: Content) -> list[tuple[str, BuildTask]]:
    return [
        (f"{quest.id}/{task.id}", task)
        for quest in content.quests
        for task in quest.tasks
        if isinstance(task, BuildTask)
    ]


def list_tasks(content: Content) -> str:
    rows = gradable_tasks(content)
    width = max((len(ref) for ref, _ in rows), default=0)
    return "\n".join(f"{ref:<{width}}  {task.title} (+{task.xp} XP)" for ref, task in rows)


def grade_file(
    settings: Settings,
    content: Content,
    path: Path,
    task_ref: str,
    *,
    insecure: bool,
    seed: int | None = None,
) -> Verdict:
    """Grade one file as a worker would; ``seed`` replays a draw a verdict named."""
    spec = prepare(settings, content, path, task_ref)
    with open_sandbox(settings, insecure=insecure) as zygote:
        return grade_prepared(spec, zygote, seed=seed)


def watch_file(
    settings: Settings,
    content: Content,
    path: Path,
    task_ref: str,
    *,
    insecure: bool,
    seed: int | None = None,
    as_json: bool = False,
) -> NoReturn:
    """Grade ``path`` now and again after every save, with one warm zygote, until Ctrl-C.

    A save that leaves the file unreadable or invalid prints its one-line reason (or a
    ``rejected`` JSON object) and the watch goes on.
    """
    _build_task(content, task_ref)  # an unknown task is an error now, not on every save
    print(f"watching {path}: save it to grade again; Ctrl-C stops", file=sys.stderr)
    with open_sandbox(settings, insecure=insecure) as zygote, FileWatch(path) as saves:
        graded: bytes | None = None
        while True:
            data = _read(path)
            if data != graded:
                graded = data
                try:
                    spec = prepare(settings, content, path, task_ref, data)
                except UserError as exc:
                    print(rejected(str(exc)) if as_json else f"{_clock()} {exc}", flush=True)
                else:
                    verdict = grade_prepared(spec, zygote, seed=seed)
                    print(render(verdict, as_json=as_json, compact=True), flush=True)
            saves.wait()


def rejected(message: str) -> str:
    """The one JSON object ``--json`` prints for input it refused (exit code 2)."""
    return json.dumps({"status": "rejected", "message": message}, ensure_ascii=False)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _clock() -> str:
    return datetime.now().astimezone().strftime("%H:%M:%S")


def prepare(
    settings: Settings, content: Content, path: Path, task_ref: str, data: bytes | None = None
) -> JobSpec:
    """The job a worker would get for this file (``data``: its bytes, already read);
    UserError saying what is wrong with it."""
    task = _build_task(content, task_ref)
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UserError(f"cannot read {path}: {exc.strerror}") from None
    try:
        prepared = validate_submission(
            path.name,
            data,
            max_py_bytes=settings.max_py_bytes,
            max_ipynb_bytes=settings.max_notebook_bytes,
        )
    except SubmissionRejected as exc:
        raise UserError(f"{path}: {exc}") from None
    return JobSpec.build(task_ref, task, prepared, path.name)


def open_sandbox(settings: Settings, *, insecure: bool) -> Zygote:
    """A started zygote with the minimum isolation (unless ``insecure``).

    Forked from this process when that is safe, which saves the zygote's own torch import:
    torch is imported here first, and nothing has been planned yet.  A process holding a
    secret (a Discord token, a database password) starts it by exec as a worker does.
    """
    import torch  # noqa: F401 - imported before the fork, so the zygote shares it

    zygote = Zygote(fork=may_fork(settings))
    try:
        zygote.start()
        if not insecure and not minimum_ok(zygote.isolation_report()):
            raise UserError(
                "the sandbox's minimum isolation is not available here (see `brrrbot worker "
                "--check`); use --insecure-sandbox to grade your own code anyway"
            )
    except BaseException:
        zygote.close()
        raise
    return zygote


def may_fork(settings: Settings) -> bool:
    """Whether this process holds nothing a job must not read (see ``open_sandbox``)."""
    return settings.discord_token is None and parse_url(settings.database_url).password is None


def _build_task(content: Content, task_ref: str) -> BuildTask:
    try:
        _, task = content.find_task(task_ref)
    except KeyError:
        raise UserError(
            f"unknown task {task_ref!r}; `brrrbot grade --list` shows the gradable tasks"
        ) from None
    if not isinstance(task, BuildTask):
        raise UserError(
            f"{task_ref} is a {task.kind} task, not graded code; `brrrbot grade --list` shows "
            "the gradable tasks"
        )
    return task


def render(verdict: Verdict, *, as_json: bool, compact: bool = False) -> str:
    """The verdict for a terminal; ``compact`` (for --watch) leaves out what passed."""
    if as_json:
        return json.dumps(verdict.to_json(), ensure_ascii=False)
    word = {"passed": "Passed", "failed": "Failed", "error": "Error"}[verdict.status]
    if compact:
        lines = [
            f"{_clock()} {word} {verdict.task} (score {verdict.score:.2f}, "
            f"{verdict.duration_s:.2f} s)"
        ]
        lines += [f"  {c.mark} {c.name}: {c.message}" for c in verdict.checks if not c.passed]
        return "\n".join(lines)
    lines = [
        f"{verdict.task}: {word} (score {verdict.score:.2f}, "
        f"{verdict.duration_s:.2f} s on {verdict.device})"
    ]
    lines += [f"  {c.mark} {c.name}: {c.message}" for c in verdict.checks]
    if verdict.feedback:
        lines += ["", verdict.feedback]
    lines += [f"note: {note}" for note in verdict.notes]
    return "\n".join(lines)
