"""``brrrbot worker``: a pool of grading worker processes.

Each worker process owns one warm zygote and one database engine, and grades
one job at a time, so N processes grade N jobs in parallel.  With N > 1 this
process only supervises: it starts the workers by exec (never fork: no shared
state), restarts one that dies (after 1 s, doubling to 60 s while it keeps dying, see
``bot.background``), and stops them all on SIGTERM/SIGINT.  With N = 1 the worker runs in
this process; ``brrrbot run`` supervises the pool process itself, whatever N.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from contextlib import closing

from bot.background import Backoff
from bot.config import DeviceChoice, Settings
from bot.db.engine import make_engine
from bot.errors import UserError
from bot.jobs import verdict_pipe
from bot.jobs.capabilities import Capabilities
from bot.worker import PARENT_PID_ENV
from bot.worker.device import detect
from bot.worker.peaks import measure_peaks
from graders.registry import grader_names, load_grader
from sandbox import Zygote, format_report, linux, minimum_ok

log = logging.getLogger(__name__)

#: how often the supervisor looks at its workers
POLL_S = 0.2


def check(settings: Settings) -> int:
    """Print the isolation report, the roofline a worker measures here and the device it
    would grade on; exit 0 when ``brrrbot worker`` would start here, 1 otherwise (the same
    tests, in the same order)."""
    with Zygote() as zygote:
        layers = zygote.isolation_report()
    print(format_report(layers))
    try:
        print(f"roofline: {measure_peaks().describe()}")
    except Exception as exc:  # a worker grades without one (Worker._measure_peaks)
        print(f"roofline: not measured: {type(exc).__name__}: {exc}")
    try:
        capabilities = detect(settings.worker_device)
    except RuntimeError as exc:
        print(f"device: {exc}: FAIL")
        return 1
    device = f"cuda ({capabilities.gpu_name})" if capabilities.cuda else "cpu"
    print(f"device: {device} (WORKER_DEVICE={settings.worker_device}): OK")
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
    device = settings.worker_device
    # only WORKER_DEVICE=cuda can be refused here: then before anything is started
    capabilities = _capabilities(device) if device == "cuda" else None
    # The zygote (exec-started: it inherits nothing of this process) imports torch and probes
    # its sandbox on another core while this process imports torch and the graders, so a
    # worker is ready sooner; this process imports torch only after the launch.  Its partner
    # (the speed trials' reference side) starts alongside, so no trial waits for it.
    zygote = Zygote()
    zygote.launch(partner=True)
    with closing(zygote):  # stopped however the start fails
        if capabilities is None:
            capabilities = _capabilities(device)
        from bot.worker.job_loop import Worker  # imports torch

        for name in sorted(grader_names()):
            load_grader(name)  # import every grader now, not during the first job
        layers = zygote.isolation_report()  # waits until the zygote is ready
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
        engine = make_engine(settings.database_url.get_secret_value())
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        worker = Worker(
            engine, zygote, capabilities=capabilities, lease_s=float(settings.lease_seconds)
        )
        try:
            await worker.run(stop)
        finally:
            await engine.dispose()
    return 0


def _capabilities(device: DeviceChoice) -> Capabilities:
    try:
        return detect(device)
    except RuntimeError as exc:
        raise UserError(str(exc)) from None


def _supervise(count: int, *, insecure: bool) -> int:
    stopping = False

    def _stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    # each worker stops (gracefully) if this supervisor dies, so none is left orphaned beside
    # the pool that replaces this one
    env = {**os.environ, PARENT_PID_ENV: str(os.getpid())}
    slots = [_Slot(worker_command(1, insecure=insecure), env) for _ in range(count)]
    log.info("started %d worker processes", count)
    try:
        while not stopping:
            time.sleep(POLL_S)
            for slot in slots:
                if not stopping:
                    slot.tend(time.monotonic())
    finally:
        for slot in slots:
            slot.terminate()
        for slot in slots:
            slot.reap()
    return 0


class _Slot:
    """One worker of the pool: restarted whenever it exits, with backoff (``Backoff``).

    The wait is scheduled, not slept, so one crash-looping worker never delays the others.
    """

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.command = command
        self.env = env
        self.pass_fds = verdict_pipe.passed_on(env)  # the bot's pipe, for each worker
        self.backoff = Backoff()
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.restart_at: float | None = None
        self._start(time.monotonic())

    def _start(self, now: float) -> None:
        self.process = subprocess.Popen(self.command, env=self.env, pass_fds=self.pass_fds)
        self.started_at = now
        self.restart_at = None

    def tend(self, now: float) -> None:
        """Notice an exit and schedule the restart; start the worker when its time has come."""
        if self.restart_at is not None:
            if now >= self.restart_at:
                self._start(now)
            return
        assert self.process is not None
        code = self.process.poll()
        if code is None:
            return
        if code == UserError.exit_code:
            raise UserError(f"worker {self.process.pid} refused to start (exit code {code})")
        delay = self.backoff.delay(now - self.started_at)
        log.warning(
            "worker %d exited with %d after %.0f s; restarting it in %.0f s",
            self.process.pid,
            code,
            now - self.started_at,
            delay,
        )
        self.restart_at = now + delay

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def reap(self) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
