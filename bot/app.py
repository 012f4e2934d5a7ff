"""The Discord client: intents, mention safety, extensions and command sync.

Feature areas live in extensions under ``bot/exts`` (one cog each); this
class only wires them to the shared services.  It asks for no privileged
intents: slash commands and attachments need none.
"""

from __future__ import annotations

import logging

import discord
from discord.ext import commands

from bot import clock
from bot.command_sync import commands_digest, remember_synced, synced_digest
from bot.services import Services

log = logging.getLogger(__name__)

#: extensions loaded at start, one per feature area
EXTENSIONS: tuple[str, ...] = (
    "bot.exts.quests",
    "bot.exts.submissions",
    "bot.exts.message_submit",
    "bot.exts.delivery",
    "bot.exts.answers",
    "bot.exts.progress",
    "bot.exts.schedule",
    "bot.exts.roles",
    "bot.exts.admin",
    "bot.exts.privacy",
    "bot.exts.help",
    "bot.exts.stale_components",
)


class BrrrBot(commands.Bot):
    def __init__(self, services: Services) -> None:
        # The bot never joins voice: don't warn at every start about voice libraries.
        discord.VoiceClient.warn_nacl = False
        discord.VoiceClient.warn_dave = False
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
        from bot.exts.errors import on_app_command_error

        self.tree.on_error = on_app_command_error
        for extension in EXTENSIONS:
            await self.load_extension(extension)
        await self._sync_commands()

    async def _sync_commands(self) -> None:
        """Sync the command tree only when it differs from the last one synced, so a restart
        does not rewrite every command on Discord."""
        assert self.application_id is not None  # known once logged in, before setup_hook
        payload = [command.to_dict(self.tree) for command in self.tree.get_commands()]
        digest = commands_digest(payload, self.application_id)
        if await self.services.read(synced_digest) == digest:
            log.info("commands unchanged: not synced")
            return
        synced = await self.tree.sync()
        await self.services.write(remember_synced, digest, now=clock.now())
        log.info("synced %d commands", len(synced))

    async def on_ready(self) -> None:
        log.info("connected as %s in %d server(s)", self.user, len(self.guilds))
