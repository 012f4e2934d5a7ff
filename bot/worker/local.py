"""``brrrbot grade``: grade a local file through the same sandbox and grader as a worker.

The file becomes a ``JobSpec`` built from the local content, exactly as ``/submit`` builds one
from a server's map, and is graded by the worker's own ``grade_prepared``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import NoReturn

from bot.clean_start import is_clean
from bot.config import Settings
from bot.content import Content, TaskRef
from bot.content.schema import BuildTask
from bot.errors import UserError
from bot.intake.accept import find_build_task, prepare_job
from bot.intake.refusals import NotABuildTask, Refusal, Refused, UnknownTask
from bot.intake.submission_input import UploadLimits
from bot.jobs.job_spec import JobSpec
from bot.presentation.refusal_words import refusal_words
from bot.startup import load_content_or_fail
from bot.worker import peaks
from bot.worker.file_watch import FileWatch
from bot.worker.grade_job import grade_prepared
from graders.base import Verdict
from graders.bottleneck import RooflineFigures
from sandbox import Zygote, minimum_ok

EXIT_CODES = {"passed": 0, "failed": 1, "error": 2}


def roofline_file() -> Path:
    """Where a terminal remembers this host's measured roofline (``peaks.remembered``)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "brrrbot" / "roofline.json"


def gradable_tasks(content: Content) -> list[tuple[str, BuildTask]]:
    return [
        (str(TaskRef(quest.id, task.id)), task)
        for quest in content.quests
        for task in quest.tasks
        if isinstance(task, BuildTask)
    ]


def list_tasks(content: Content) -> str:
    rows = gradable_tasks(content)
    width = max((len(ref) for ref, _ in rows), default=0)
    return "\n".join(f"{ref:<{width}}  {task.title} (+{task.xp} XP)" for ref, task in rows)


def grade_command(
    settings: Settings,
    sandbox: Zygote,
    path: Path,
    task_ref: str,
    *,
    insecure: bool,
    seed: int | None = None,
    as_json: bool = False,
    watch: bool = False,
    trial: bool = True,
    profile: bool = False,
) -> int:
    """``brrrbot grade``: print the verdict and return its exit code (or, with ``watch``,
    grade again on every save until Ctrl-C).  ``trial=False`` skips a speed trial;
    ``profile`` profiles the function after it and writes the roofline picture next to
    ``path``.

    ``sandbox`` is on its way up (``launch_sandbox``): it warms up and probes its isolation
    while the quest content loads on the other core.
    """
    with closing(sandbox) as zygote:  # entering would wait for it
        data = None if watch else read_file(path)  # a watch may start before the file is right
        content = load_content_or_fail(settings)
        task = _build_task(content, task_ref)
        if not insecure and not minimum_ok(zygote.isolation_report()):
            raise UserError(
                "the sandbox's minimum isolation is not available here (see `brrrbot worker "
                "--check`); use --insecure-sandbox to grade your own code anyway"
            )
        if watch:
            _watch(settings, zygote, task, path, task_ref, seed=seed, as_json=as_json)
        spec = prepare(settings, task, path, task_ref, data)
        if not trial:
            spec = without_trial(spec, "speed trial skipped (--no-trial)")
        elif spec.speed is not None:
            peaks.remembered(roofline_file())
            speed = dataclasses.replace(spec.speed, profile=profile)
            spec = dataclasses.replace(spec, speed=speed)
        verdict = grade_prepared(spec, zygote, seed=seed)
    picture = roofline_picture(verdict, path) if profile else None
    print(render(verdict, as_json=as_json))
    if profile:  # beside the JSON, not in it: stdout stays one object
        print(picture_line(verdict, picture), file=sys.stderr if as_json else sys.stdout)
    return EXIT_CODES[verdict.status]


def roofline_picture(verdict: Verdict, path: Path) -> Path | None:
    """Write the verdict's roofline picture next to the graded file (``NAME.roofline.png``);
    None when the verdict has none to draw."""
    from bot.presentation.roofline_charts import roofline_chart  # Pillow: only with --profile
    from bot.presentation.roofline_image import roofline_png

    figures = RooflineFigures.of(verdict.speed) if verdict.speed is not None else None
    if figures is None or verdict.speed is None:
        return None
    target = path.with_name(f"{path.stem}.roofline.png")
    target.write_bytes(roofline_png(roofline_chart(figures, verdict.task, verdict.speed.device)))
    return target


def picture_line(verdict: Verdict, picture: Path | None) -> str:
    """What ``--profile`` says of the picture: where it is and, in words, what it shows."""
    from bot.presentation.roofline_charts import roofline_summary

    figures = RooflineFigures.of(verdict.speed) if verdict.speed is not None else None
    if picture is None or figures is None:
        return "roofline: no picture (the trial placed nothing on a roofline)"
    return f"roofline: {roofline_summary(figures)}; picture written to {picture}"


def _watch(
    settings: Settings,
    zygote: Zygote,
    task: BuildTask,
    path: Path,
    task_ref: str,
    *,
    seed: int | None,
    as_json: bool,
) -> NoReturn:
    """Grade ``path`` now and after every save, with one warm zygote, until Ctrl-C.

    A save that leaves the file unreadable or invalid prints its one-line reason (or a
    ``rejected`` JSON object) and the watch goes on.
    """
    print(f"watching {path}: save it to grade again; Ctrl-C stops", file=sys.stderr)
    with FileWatch(path) as saves:
        graded: bytes | None = None
        while True:
            data = _read(path)
            if data != graded:
                graded = data
                try:
                    spec = prepare(settings, task, path, task_ref, data)
                except UserError as exc:
                    print(rejected(str(exc)) if as_json else f"{_clock()} {exc}", flush=True)
                else:
                    verdict = grade_prepared(
                        without_trial(spec, "speed trial skipped while watching"), zygote, seed=seed
                    )
                    print(render(verdict, as_json=as_json, compact=True), flush=True)
            saves.wait()


def without_trial(spec: JobSpec, why: str) -> JobSpec:
    """``spec`` with no speed trial (a watch answers each save in a fraction of a second, and
    ``--no-trial`` asks for none): the trial and its roofline are left to a plain
    ``brrrbot grade``, and the verdict says so, starting with ``why``."""
    if spec.speed is None:
        return spec
    note = (
        f"{why}: run `brrrbot grade {spec.filename} --task {spec.task_ref}` to time "
        f"{spec.speed.function} against the reference"
    )
    return dataclasses.replace(spec, speed=None, notes=(*spec.notes, note))


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


def read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None


def prepare(
    settings: Settings, task: BuildTask, path: Path, task_ref: str, data: bytes | None
) -> JobSpec:
    """The job a worker would get for this file (``data``: its bytes, None when it could
    not be read); UserError saying what is wrong with it."""
    if data is None:
        data = read_file(path)
    try:
        _, spec = prepare_job(task_ref, task, path.name, data, UploadLimits.of(settings))
    except Refused as exc:
        raise UserError(f"{path}: {refusal_line(exc.refusal)}") from None
    return spec


def launch_sandbox(*, huge_pages: bool = False, partner: bool = False) -> Zygote:
    """A zygote on its way up (``start`` or the first run waits for it).

    Call it before reading any setting or file.  The zygote is forked from this process,
    which saves its own torch import (torch is imported here first), when the environment
    holds only plain variables (``bot.clean_start`` restarted the command for that);
    otherwise it is started by exec, as a worker's is.  One grade starts fastest without
    the huge-page collapse; a watch pays it once, then forks each job faster.  ``partner``
    starts the speed trial's second zygote with it, the same way.
    """
    import torch  # noqa: F401 - imported before the fork, so the zygote shares it

    zygote = Zygote(fork=is_clean(), huge_pages=huge_pages)
    zygote.launch(partner=partner)
    return zygote


def _build_task(content: Content, task_ref: str) -> BuildTask:
    try:
        _, task = find_build_task(content, task_ref)
    except Refused as exc:
        raise UserError(refusal_line(exc.refusal)) from None
    return task


def refusal_line(refusal: Refusal) -> str:
    """``brrrbot grade``'s words for a refusal of intake: the shared ones, but a task it does
    not grade points at ``--list``."""
    match refusal:
        case UnknownTask(ref=ref):
            return f"unknown task {ref!r}; `brrrbot grade --list` shows the gradable tasks"
        case NotABuildTask(ref=ref, kind=kind):
            return (
                f"{ref} is a {kind} task, not graded code; `brrrbot grade --list` shows "
                "the gradable tasks"
            )
    return refusal_words(refusal)


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
