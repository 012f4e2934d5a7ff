"""``brrrbot run``: prepare the database and content, then run the bot and local workers.

The local worker pool is a child process started by exec (``brrrbot worker``):
the bot process itself never imports torch and never runs learner code.  The bot
supervises that process: whenever it exits it is started again (with backoff), and
it gets only the settings a worker needs, never the Discord token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping

import aiohttp
import discord

from bot.app import BrrrBot
from bot.config import ENV_FILE_VARIABLE, Settings
from bot.content import Content
from bot.content.location import content_directory
from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.errors import ConfigError, ServiceUnavailable
from bot.grading import PARENT_PID_ENV
from bot.sandbox import linux
from bot.services import Services
from bot.startup import load_content_or_fail
from bot.supervision import Backoff

log = logging.getLogger(__name__)


def run(settings: Settings, *, local_workers: int) -> int:
    token = settings.require_token()
    linux.make_undumpable()  # the token is in our memory and maybe our environment
    content = load_content_or_fail(settings)
    asyncio.run(_serve(settings, content, token, local_workers))
    return 0


async def _serve(settings: Settings, content: Content, token: str, local_workers: int) -> None:
    engine = make_engine(settings.database_url)
    try:
        await migrate.upgrade(engine)
        log.info("database at revision %s", await migrate.current(engine))
        services = Services(
            settings,
            content,
            engine,
            make_sessionmaker(engine),
            make_sessionmaker(engine, read_only=True),
        )
        bot = BrrrBot(services)
        try:
            async with local_worker_pool(local_workers, settings), bot:
                await bot.start(token)
        except discord.LoginFailure:
            raise ConfigError(
                "DISCORD_TOKEN was rejected by Discord; reset the token in the developer "
                "portal (Applications > your app > Bot) and update .env"
            ) from None
        except discord.PrivilegedIntentsRequired:
            raise ConfigError("Discord refused the gateway intents the bot asked for") from None
        except (aiohttp.ClientConnectionError, OSError) as exc:
            raise ServiceUnavailable(f"cannot reach Discord: {exc}") from None
    finally:
        await engine.dispose()


#: variables the local pool inherits from the bot's environment: the system's, the
#: interpreter's, the GPU stack's and a faked clock's (LD_PRELOAD, FAKETIME*), never a secret
INHERITED = frozenset(
    {"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "USER", "LOGNAME", "VIRTUAL_ENV"}
    | {"LD_PRELOAD", "LD_LIBRARY_PATH"}
)
INHERITED_PREFIXES = ("LC_", "PYTHON", "FAKETIME", "CUDA_", "NVIDIA_", "TORCH_", "OMP_", "MKL_")


def worker_environment(
    environ: Mapping[str, str], settings: Settings, parent_pid: int
) -> dict[str, str]:
    """What the local pool runs with: the settings a worker reads, made explicit (so values
    from ``.env`` reach it), plus the inherited basics; DISCORD_TOKEN and anything else of the
    bot's stays behind, so neither a worker nor a job in a degraded sandbox can read it."""
    inherited = {
        name: value
        for name, value in environ.items()
        if name in INHERITED or name.startswith(INHERITED_PREFIXES)
    }
    return {
        **inherited,
        "DATABASE_URL": settings.database_url,
        "QUESTS_DIR": str(content_directory(settings.quests_dir)),
        "LOG_LEVEL": settings.log_level,
        "WORKER_DEVICE": settings.worker_device,
        "LEASE_SECONDS": str(settings.lease_seconds),
        "MAX_PY_BYTES": str(settings.max_py_bytes),
        "MAX_NOTEBOOK_BYTES": str(settings.max_notebook_bytes),
        PARENT_PID_ENV: str(parent_pid),  # it exits when the bot dies
        ENV_FILE_VARIABLE: "",  # everything it needs is above: it must not read .env
    }


@contextlib.asynccontextmanager
async def local_worker_pool(count: int, settings: Settings) -> AsyncIterator[None]:
    """Run ``brrrbot worker --count N`` beside the bot for as long as it runs, replacing it
    whenever it exits (see ``PoolSupervisor``)."""
    if count < 1:
        yield
        return
    supervisor = PoolSupervisor(count, worker_environment(os.environ, settings, os.getpid()))
    task = asyncio.create_task(supervisor.run(), name="worker-pool")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await supervisor.stop()


class PoolSupervisor:
    """Keeps one local pool process running: a pool that exits (crashed, OOM-killed, its
    worker's zygote gone) is started again after ``Backoff``'s delay, so the bot never goes
    on accepting submissions that nothing will grade."""

    def __init__(self, count: int, env: dict[str, str], backoff: Backoff | None = None) -> None:
        self.command = [sys.executable, "-m", "bot", "worker", "--count", str(count)]
        self.count = count
        self.env = env
        self.backoff = backoff or Backoff()
        self.process: asyncio.subprocess.Process | None = None

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            try:
                self.process = await asyncio.create_subprocess_exec(*self.command, env=self.env)
            except OSError as exc:  # e.g. out of processes or memory: try again later
                what = f"could not be started ({exc})"
            else:
                pid = self.process.pid
                log.info("started %d local grading worker(s), pid %d", self.count, pid)
                what = f"(pid {pid}) {_describe_exit(await self.process.wait())}"
            ran_s = loop.time() - started
            delay = self.backoff.delay(ran_s)
            log.error(
                "the local grading workers %s after %.0f s; starting them again in %g s",
                what,
                ran_s,
                delay,
            )
            await asyncio.sleep(delay)

    async def stop(self) -> None:
        """Ask the pool to finish its jobs in hand and exit; kill it after 30 s."""
        process = self.process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


def _describe_exit(code: int) -> str:
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = f" ({signal.Signals(-code).name})"
    except ValueError:
        name = ""
    return f"were killed by signal {-code}{name}"
