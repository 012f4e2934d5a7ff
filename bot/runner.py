"""``brrrbot run``: prepare the database and content, then run the bot and local workers.

The local worker pool is a child process started by exec (``brrrbot worker``):
the bot process itself never imports torch and never runs learner code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator

import aiohttp
import discord

from bot.app import BrrrBot
from bot.config import Settings
from bot.content import Content
from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.errors import ConfigError, ServiceUnavailable
from bot.grading import PARENT_PID_ENV
from bot.sandbox import linux
from bot.services import Services
from bot.startup import load_content_or_fail

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
            async with local_worker_pool(local_workers), bot:
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


@contextlib.asynccontextmanager
async def local_worker_pool(count: int) -> AsyncIterator[None]:
    """Run ``brrrbot worker --count N`` beside the bot for as long as it runs."""
    if count < 1:
        yield
        return
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "worker",
        "--count",
        str(count),
        env={**os.environ, PARENT_PID_ENV: str(os.getpid())},  # it exits when the bot dies
    )
    log.info("started %d local grading worker(s), pid %d", count, process.pid)
    watcher = asyncio.create_task(_report_early_exit(process), name="worker-pool-watch")
    try:
        yield
    finally:
        watcher.cancel()
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.kill()
                await process.wait()


async def _report_early_exit(process: asyncio.subprocess.Process) -> None:
    """Say loudly when the local pool stops while the bot runs: submissions would only queue."""
    code = await process.wait()
    log.error(
        "the local grading workers exited with code %d; submissions will wait in the queue "
        "until a worker runs (see `brrrbot worker --check`)",
        code,
    )
