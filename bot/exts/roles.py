"""The loop that hands out level and champion roles, and the Discord side of each role write.

Who should hold what, in which order, and what a failure costs is decided in
``bot.progress.role_sync``; this cog runs it whenever something may have changed (an XP
change in this process, a role configuration change, a weekly champion) and every few seconds
otherwise, since workers and other processes write XP too.  Writes go out one at a time:
discord.py waits on Discord's per-server role bucket and on 429s by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import discord
from discord.ext import commands

from bot.app import BrrrBot
from bot.progress import role_sync
from bot.supervision import Backoff

log = logging.getLogger(__name__)

POLL_S = 3.0
PASS_LIMIT = 200  # members per pass; a fuller queue is drained pass after pass
UNKNOWN_MEMBER = 10007
UNKNOWN_ROLE = 10011


class Roles(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        self.transport = DiscordRoles(bot)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def cog_load(self) -> None:
        self._task = asyncio.create_task(self._sync_forever(), name="role-sync")

    async def cog_unload(self) -> None:
        if self._task:
            self._task.cancel()

    def wake(self) -> None:
        self._wake.set()

    @commands.Cog.listener()
    async def on_xp_changed(self, guild_id: int) -> None:
        self.wake()

    @commands.Cog.listener()
    async def on_roles_changed(self, guild_id: int) -> None:
        self.wake()

    async def _sync_forever(self) -> None:
        await self.bot.wait_until_ready()
        backoff = Backoff()
        healthy_since = time.monotonic()
        while True:
            self._wake.clear()  # a wake during the pass asks for another one
            pause = POLL_S
            try:
                result = await role_sync.drain(self.bot.services, self.transport, limit=PASS_LIMIT)
                if result.synced + result.failed >= PASS_LIMIT:
                    pause = 0.0  # more are due: go on at once
            except Exception:
                pause = backoff.delay(time.monotonic() - healthy_since)
                log.exception("role sync pass failed; retrying in %.0f s", pause)
                healthy_since = time.monotonic() + pause
            if pause:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), pause)


class DiscordRoles:
    """``bot.progress.role_sync.RoleTransport`` over discord.py's HTTP client (no member cache
    needed: the bot asks for no members intent)."""

    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot

    async def add(self, guild_id: int, user_id: int, role_id: int, reason: str) -> None:
        try:
            await self.bot.http.add_role(guild_id, user_id, role_id, reason=reason)
        except discord.HTTPException as exc:
            _raise_known(exc)
            raise

    async def remove(self, guild_id: int, user_id: int, role_id: int, reason: str) -> None:
        try:
            await self.bot.http.remove_role(guild_id, user_id, role_id, reason=reason)
        except discord.HTTPException as exc:
            _raise_known(exc)
            raise


def _raise_known(exc: discord.HTTPException) -> None:
    """Raise Discord's known refusals as the reconciler's errors; return on anything else."""
    if isinstance(exc, discord.NotFound) and exc.code == UNKNOWN_MEMBER:
        raise role_sync.UnknownMember(exc.text) from exc
    if isinstance(exc, discord.NotFound) and exc.code == UNKNOWN_ROLE:
        raise role_sync.UnknownRole(exc.text) from exc
    if isinstance(exc, discord.Forbidden):
        raise role_sync.RoleWriteRefused(exc.code, exc.text) from exc


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Roles(bot))
