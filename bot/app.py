"""The Discord client: intents, mention safety and extension loading.

Feature areas live in extensions under ``bot/exts``; this class only wires
them to the shared services.  It asks for no privileged intents: slash
commands and attachments need none.
"""

from __future__ import annotations

import logging

import discord
from discord.ext import commands

from bot.services import Services

log = logging.getLogger(__name__)

#: extensions loaded at start, one per feature area
EXTENSIONS: tuple[str, ...] = ()


class BrrrBot(commands.Bot):
    def __init__(self, services: Services) -> None:
        intents = discord.Intents.none()
        intents.guilds = True
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=intents,
            # Nothing the bot posts may ping @everyone, @here or roles.
            allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=True),
            help_command=None,
        )
        self.services = services

    async def setup_hook(self) -> None:
        for extension in EXTENSIONS:
            await self.load_extension(extension)

    async def on_ready(self) -> None:
        user = self.user
        log.info("connected as %s in %d server(s)", user, len(self.guilds))
