"""``brrrbot worker``: a pool of grading worker processes.

Each worker process owns one warm zygote and one database engine, and grades
one job at a time, so N processes grade N jobs in parallel.  With N > 1 this
process only supervises: it starts the workers by exec (never fork: no shared
state), restarts one that dies, and stops them all on SIGTERM/SIGINT.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time

from bot.config import Settings
from bot.content import BuildTask, load_content
from bot.db.engine import make_engine
from bot.db.migrate import require_current
from bot.errors import UserError
from bot.grading import PARENT_PID_ENV
from bot.grading.capabilities import detect
from bot.grading.worker import Worker
from bot.sandbox import Zygote, format_report, linux, minimum_ok
from graders import load_grader

log = logging.getLogger(__name__)

RESTART_DELAY_S = 2.0


def check(settings: Settings) -> int:
    """Print the isolation report; exit 0 when the minimum holds, 1 otherwise."""
    with Zygote() as zygote:
        layers = zygote.isolation_report()
    print(format_report(layers))
    return 0 if minimum_ok(layers) else 1


def run_pool(settings: Settings, count: int, *, insecure: bool) -> int:
    if count < 1:
        raise UserError("--count must be at least 1")
    exit_with_parent()
    if count == 1:
        return asyncio.run(_run_one(settings, insecure=insecure))
    return _supervise(count, insecure=insecure)


def exit_with_parent() -> None:
    """A pool that ``brrrbot run`` started stops when the bot dies, however it dies.

    A bot killed with SIGKILL cannot stop its pool, and its restart starts another one, so
    orphaned pools would pile up and keep the database busy.  The kernel sends SIGTERM (a
    graceful stop: the job in hand is finished) when the parent dies.
    """
    parent = os.environ.pop(PARENT_PID_ENV, None)  # popped: our own children must not check it
    if not parent:
        return
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != int(parent):  # it died before the signal was armed
        raise SystemExit(0)


def worker_command(count: int, *, insecure: bool) -> list[str]:
    """How to start a pool of ``count`` workers from another process."""
    command = [sys.executable, "-m", "bot", "worker", "--count", str(count)]
    return [*command, "--insecure-sandbox"] if insecure else command


async def _run_one(settings: Settings, *, insecure: bool) -> int:
    linux.make_undumpable()
    try:
        capabilities = detect(settings.worker_device)
    except RuntimeError as exc:
        raise UserError(str(exc)) from None
    content = load_content(settings.quests_dir)
    for name in {t.grader for q in content.quests for t in q.tasks if isinstance(t, BuildTask)}:
        load_grader(name)  # import graders (and torch) now, not during the first job
    with Zygote() as zygote:
        layers = zygote.isolation_report()
        for line in format_report(layers).splitlines():
            log.info("%s", line)
        if not minimum_ok(layers):
            if not insecure:
                raise UserError(
                    "the sandbox's minimum isolation is not available here (see "
                    "`brrrbot worker --check`); refusing to grade. Use --insecure-sandbox "
                    "only on a machine where learner code may do anything."
                )
            log.warning("grading WITHOUT the minimum isolation (--insecure-sandbox)")
        engine = make_engine(settings.database_url)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        worker = Worker(
            engine,
            content,
            zygote,
            capabilities=capabilities,
            size_limits={
                "max_py_bytes": settings.max_py_bytes,
                "max_ipynb_bytes": settings.max_notebook_bytes,
            },
            lease_s=float(settings.lease_seconds),
        )
        try:
            await require_current(engine)
            await worker.run(stop)
        finally:
            await engine.dispose()
    return 0


def _supervise(count: int, *, insecure: bool) -> int:
    stopping = False

    def _stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    children = [subprocess.Popen(worker_command(1, insecure=insecure)) for _ in range(count)]
    log.info("started %d worker processes", count)
    try:
        while not stopping:
            time.sleep(0.5)
            for index, child in enumerate(children):
                code = child.poll()
                if code is None or stopping:
                    continue
                if code == UserError.exit_code:
                    raise UserError(f"worker {child.pid} refused to start (exit code {code})")
                log.warning("worker %d exited with %d; restarting", child.pid, code)
                time.sleep(RESTART_DELAY_S)
                children[index] = subprocess.Popen(worker_command(1, insecure=insecure))
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
    return 0
