"""The loop that hands out level and champion roles, and the Discord side of each role write.

Who should hold what, in which order, and what a failure costs is decided in
``bot.progress.role_sync``; this cog runs it as a ``bot.background.PassLoop`` whenever something
may have changed (an XP change in this process, a role configuration change, a weekly
champion) and every few seconds otherwise, since other processes write XP too.  Writes go out
one at a time: discord.py waits on Discord's per-server role bucket and on 429s by itself.
"""

from __future__ import annotations

import discord
from discord.ext import commands

from bot.app import BrrrBot
from bot.background import PassLoop
from bot.progress import role_sync

POLL_S = 3.0
PASS_LIMIT = 200  # members per pass; a fuller queue is drained pass after pass
UNKNOWN_MEMBER = 10007
UNKNOWN_ROLE = 10011


class Roles(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        self.transport = DiscordRoles(bot)
        self.loop = PassLoop("role-sync", self._pass, idle_s=POLL_S)

    async def cog_load(self) -> None:
        self.loop.start(ready=self.bot.wait_until_ready)

    async def cog_unload(self) -> None:
        await self.loop.stop(grace_s=0)

    async def drain(self) -> None:
        """For a graceful stop: start no new pass and let the one in hand finish (the bot's
        drain time at most; a member cut off is synced again when their lease ends)."""
        await self.loop.stop()

    def wake(self) -> None:
        self.loop.wake()

    @commands.Cog.listener()
    async def on_xp_changed(self, guild_id: int) -> None:
        self.wake()

    @commands.Cog.listener()
    async def on_roles_changed(self, guild_id: int) -> None:
        self.wake()

    async def _pass(self) -> bool:
        result = await role_sync.drain(self.bot.services, self.transport, limit=PASS_LIMIT)
        return result.synced + result.failed >= PASS_LIMIT  # more are due: go on at once


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
