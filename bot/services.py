"""The shared state every part of the bot process uses, built once at start."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Concatenate, ParamSpec, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.background import Doorbell
from bot.config import Settings
from bot.content import BuildTask, Content
from bot.curriculum.guild_map import GuildMap, load_guild_map
from bot.db.models import Guild

P = ParamSpec("P")
T = TypeVar("T")
UseCase = Callable[Concatenate[AsyncSession, P], Awaitable[T]]


@dataclass
class Services:
    settings: Settings
    content: Content
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]  # for writes: take SQLite's write lock at BEGIN
    reads: async_sessionmaker[AsyncSession]  # for reads: a snapshot, never waits for writers
    #: rung when a worker may have written a verdict (``bot.runner`` hears of it): delivery
    verdicts: Doorbell = field(default_factory=Doorbell)
    _maps: dict[int, GuildMap] = field(default_factory=dict)

    async def write(self, use_case: UseCase[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a domain function in one write transaction: the cogs open no sessions."""
        async with self.sessions() as session, session.begin():
            return await use_case(session, *args, **kwargs)

    async def read(self, use_case: UseCase[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a domain function on a read snapshot."""
        async with self.reads() as session:
            return await use_case(session, *args, **kwargs)

    async def guild_map(self, guild_id: int) -> GuildMap:
        """The server's map; cached until a moderator changes it (``forget_map``)."""
        cached = self._maps.get(guild_id)
        if cached is None:
            async with self.reads() as session:
                cached = await load_guild_map(session, self.content, guild_id)
            self._maps[guild_id] = cached
        return cached

    def forget_map(self, guild_id: int) -> None:
        self._maps.pop(guild_id, None)

    async def guild(self, guild_id: int) -> Guild | None:
        async with self.reads() as session:
            return await session.get(Guild, guild_id)

    async def task_xp(self, guild_id: int, task_ref: str) -> int | None:
        try:
            _, task = (await self.guild_map(guild_id)).find_task(task_ref)
        except KeyError:
            return None
        return task.xp

    async def task_interface(self, guild_id: int, task_ref: str) -> tuple[str, ...] | None:
        """The functions a build task's solutions define (their signatures are left out of
        near-copy fingerprints), or None for a task that is gone or is no build task."""
        try:
            _, task = (await self.guild_map(guild_id)).find_task(task_ref)
        except KeyError:
            return None
        return task.function_names() if isinstance(task, BuildTask) else None
