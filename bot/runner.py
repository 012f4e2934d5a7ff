"""``brrrbot run``: prepare the database and content, then run the bot and local workers.

The local worker pool is a child process started by exec (``brrrbot worker``):
the bot process itself never imports torch and never runs learner code.  The bot
supervises that process: whenever it exits it is started again (with backoff), and
it gets only the settings a worker needs, never the Discord token.  It also gets the write end
of a pipe on which its workers announce each verdict they wrote (``bot.jobs.verdict_pipe``);
on PostgreSQL the bot also LISTENs for the verdicts any worker writes.  Either rings
``services.verdicts``, which wakes delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Mapping

import aiohttp
import discord

from bot.app import BrrrBot
from bot.background import Backoff
from bot.config import ENV_FILE_VARIABLE, Settings
from bot.content import Content
from bot.content.location import content_directory
from bot.db import migrate, presence
from bot.db.engine import make_engine, make_sessionmaker
from bot.errors import ConfigError, ServiceUnavailable
from bot.http import api_routes
from bot.http.health import HealthCheck
from bot.http.server import http_server
from bot.jobs.listen import listening
from bot.jobs.queue import VERDICTS_CHANNEL
from bot.jobs.verdict_pipe import VerdictPipe
from bot.metrics import Scrape
from bot.outage import describe, is_database_unavailable
from bot.services import Services
from bot.shutdown import Shutdown
from bot.startup import load_content_or_fail
from bot.web.site import web_pages
from bot.worker import PARENT_PID_ENV
from sandbox import linux

log = logging.getLogger(__name__)

#: after a signal: how long interactions and deliveries in flight get to finish
DRAIN_S = 4.0
#: the local pool is killed this long before the forced exit, whatever it is doing
POOL_KILL_MARGIN_S = 1.5
#: how long a pool told to stop may take to finish its jobs in hand before it is killed
POOL_GRACE_S = 7.5


def run(settings: Settings, *, local_workers: int) -> int:
    token = settings.require_token()
    linux.make_undumpable()  # the token is in our memory and maybe our environment
    content = load_content_or_fail(settings)
    asyncio.run(_serve(settings, content, token, local_workers))
    return 0


async def _serve(settings: Settings, content: Content, token: str, local_workers: int) -> None:
    shutdown = Shutdown()
    with shutdown.handling_signals():
        await _serve_until_stopped(settings, content, token, local_workers, shutdown)
    if shutdown.signal_name is not None:
        log.info("stopped")


async def _serve_until_stopped(
    settings: Settings, content: Content, token: str, local_workers: int, shutdown: Shutdown
) -> None:
    engine = make_engine(settings.database_url.get_secret_value())
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
            async with (
                presence.beating(services.sessions),  # first in, last out: the beat ends last
                http_server(
                    settings,
                    HealthCheck(bot, services.reads),
                    Scrape(services.reads, bot),
                    setups=(api_routes.setup(services),),
                ),
                web_pages(settings, services, DiscordCache(bot)),
                verdict_notifications(services),
                local_worker_pool(local_workers, settings, shutdown, services.verdicts.ring),
                bot,
            ):
                await _run_until_stopped(bot, token, shutdown)
        except discord.LoginFailure:
            raise ConfigError(
                "DISCORD_TOKEN was rejected by Discord; reset the token in the developer "
                "portal (Applications > your app > Bot) and update .env"
            ) from None
        except discord.PrivilegedIntentsRequired:
            raise ConfigError("Discord refused the gateway intents the bot asked for") from None
        except Exception as exc:
            _attribute(exc, shutdown)
    finally:
        shutdown.step = "closing the database"
        await engine.dispose()


class DiscordCache:
    """The names the web pages show that only Discord holds, from the client's cache."""

    def __init__(self, client: discord.Client) -> None:
        self.client = client

    def guild_name(self, guild_id: int) -> str | None:
        guild = self.client.get_guild(guild_id)
        return guild.name if guild is not None else None

    def role_name(self, guild_id: int, role_id: int) -> str | None:
        guild = self.client.get_guild(guild_id)
        role = guild.get_role(role_id) if guild is not None else None
        return role.name if role is not None else None


def _attribute(exc: Exception, shutdown: Shutdown) -> None:
    """Say what failed: the database (``bot.outage``) is never reported as Discord.  A stop a
    signal asked for ends cleanly even when the database was away meanwhile: what failed is
    logged, and the exit is 0."""
    if is_database_unavailable(exc):
        if shutdown.signal_name is not None:
            log.warning("stopped while the database was unavailable: %s", describe(exc))
            return
        raise ServiceUnavailable(f"the database is unavailable: {describe(exc)}") from None
    if isinstance(exc, aiohttp.ClientConnectionError | OSError):
        raise ServiceUnavailable(f"cannot reach Discord: {exc}") from None
    raise exc


async def _run_until_stopped(bot: BrrrBot, token: str, shutdown: Shutdown) -> None:
    """Run the client until it ends by itself (its error propagates) or a signal asks for a
    stop: then no new interactions, the work in flight finishes (at most ``DRAIN_S``), and the
    client closes its gateway connection normally, so Discord shows the bot offline at once."""
    client = asyncio.create_task(bot.start(token), name="discord-client")
    asked = asyncio.create_task(shutdown.requested.wait(), name="shutdown-request")
    try:
        await asyncio.wait({client, asked}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        asked.cancel()
    if client.done():
        client.result()
        return
    shutdown.step = "letting the work in flight finish"
    await bot.drain(DRAIN_S)
    shutdown.step = "closing the Discord client"
    await bot.close()
    try:
        await client
    except Exception:  # the connection's end, seen by a client that was told to close
        log.info("the Discord client ended while closing", exc_info=True)


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
        "DATABASE_URL": settings.database_url.get_secret_value(),
        "QUESTS_DIR": str(content_directory(settings.quests_dir)),
        "LOG_LEVEL": settings.log_level,
        "LOG_FORMAT": settings.log_format,
        "WORKER_DEVICE": settings.worker_device,
        "LEASE_SECONDS": str(settings.lease_seconds),
        "MAX_PY_BYTES": str(settings.max_py_bytes),
        "MAX_NOTEBOOK_BYTES": str(settings.max_notebook_bytes),
        PARENT_PID_ENV: str(parent_pid),  # it exits when the bot dies
        ENV_FILE_VARIABLE: "",  # everything it needs is above: it must not read .env
    }


@contextlib.asynccontextmanager
async def verdict_notifications(services: Services) -> AsyncIterator[None]:
    """On PostgreSQL, LISTEN for the verdicts any worker writes (``queue.complete`` NOTIFYs)
    and ring ``services.verdicts``: delivery then need not poll for them."""
    async with listening(services.engine, VERDICTS_CHANNEL, services.verdicts.ring) as listens:
        if listens:
            log.info("listening for verdicts on channel %s", VERDICTS_CHANNEL)
        yield


@contextlib.asynccontextmanager
async def local_worker_pool(
    count: int,
    settings: Settings,
    shutdown: Shutdown,
    verdict_written: Callable[[], None] = lambda: None,
) -> AsyncIterator[None]:
    """Run ``brrrbot worker --count N`` beside the bot for as long as it runs, replacing it
    whenever it exits (see ``PoolSupervisor``).  A signal to the bot reaches the pool at once
    (SIGTERM: it finishes the jobs in hand) and the pool is killed shortly before the
    shutdown's deadline; a forced exit kills it first.  Each verdict its workers write calls
    ``verdict_written`` (through ``bot.jobs.verdict_pipe``), on SQLite as on PostgreSQL."""
    if count < 1:
        yield
        return
    pipe = VerdictPipe(verdict_written)
    env = {**worker_environment(os.environ, settings, os.getpid()), **pipe.child_env()}
    supervisor = PoolSupervisor(count, env, pass_fds=pipe.child_fds())
    shutdown.on_request(supervisor.terminate)
    shutdown.on_force(supervisor.kill)
    pipe.start()
    task = asyncio.create_task(supervisor.run(), name="worker-pool")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        shutdown.step = "stopping the local worker pool"
        await supervisor.stop(max(0.0, shutdown.time_left() - POOL_KILL_MARGIN_S))
        pipe.close()


class PoolSupervisor:
    """Keeps one local pool process running: a pool that exits (crashed, OOM-killed, its
    worker's zygote gone) is started again after ``Backoff``'s delay, so the bot never goes
    on accepting submissions that nothing will grade.

    The pool runs in its own process group, so that it and its workers can be killed
    together; a terminal's Ctrl-C reaches only the bot, which passes it on as SIGTERM."""

    def __init__(
        self,
        count: int,
        env: dict[str, str],
        backoff: Backoff | None = None,
        *,
        pass_fds: tuple[int, ...] = (),
    ) -> None:
        self.command = [sys.executable, "-m", "bot", "worker", "--count", str(count)]
        self.count = count
        self.env = env
        self.pass_fds = pass_fds  # the verdict pipe's write end
        self.backoff = backoff or Backoff()
        self.process: asyncio.subprocess.Process | None = None
        self.stopping = False

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.stopping:
            started = loop.time()
            try:
                self.process = await asyncio.create_subprocess_exec(
                    *self.command, env=self.env, process_group=0, pass_fds=self.pass_fds
                )
            except OSError as exc:  # e.g. out of processes or memory: try again later
                what = f"could not be started ({exc})"
            else:
                pid = self.process.pid
                log.info("started %d local grading worker(s), pid %d", self.count, pid)
                if self.stopping:  # asked to stop while it was starting
                    self.terminate()
                code = await self.process.wait()
                if self.stopping:
                    log.info("the local grading workers (pid %d) stopped", pid)
                    return
                what = f"(pid {pid}) {_describe_exit(code)}"
            ran_s = loop.time() - started
            delay = self.backoff.delay(ran_s)
            log.error(
                "the local grading workers %s after %.0f s; starting them again in %g s",
                what,
                ran_s,
                delay,
            )
            await asyncio.sleep(delay)

    def terminate(self) -> None:
        """Ask the pool to finish its jobs in hand and exit, and start no other."""
        self.stopping = True
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()

    def kill(self) -> None:
        """SIGKILL the pool's whole process group (it and its workers; their zygotes follow
        them).  Safe from any thread (the deadline's, for a forced exit)."""
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

    async def stop(self, grace_s: float = POOL_GRACE_S) -> None:
        """``terminate``, then ``kill`` if the pool has not exited within ``grace_s``."""
        self.terminate()
        process = self.process
        if process is None or process.returncode is not None:
            return
        try:
            await asyncio.wait_for(process.wait(), grace_s)
        except TimeoutError:
            log.warning("the local grading workers did not stop within %.1f s: killed", grace_s)
            self.kill()
            await process.wait()


def _describe_exit(code: int) -> str:
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = f" ({signal.Signals(-code).name})"
    except ValueError:
        name = ""
    return f"were killed by signal {-code}{name}"
