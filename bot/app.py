"""The Discord client: intents, mention safety, extensions and command sync.

Feature areas live in extensions under ``bot/exts`` (one cog each); this
class only wires them to the shared services.  It asks for no privileged
intents: slash commands and attachments need none.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import discord
from discord.ext import commands

from bot import clock
from bot.command_sync import commands_digest, remember_synced, synced_digest
from bot.services import Services
from bot.shutdown import Drains

log = logging.getLogger(__name__)

#: the answer to an interaction that arrives while the bot is stopping
RESTARTING = "The bot is restarting; try again in a minute."

#: extensions loaded at start, one per feature area
EXTENSIONS: tuple[str, ...] = (
    "bot.exts.error_replies",  # first: the tree's error handler and server-naming check
    "bot.exts.quests",
    "bot.exts.submissions",
    "bot.exts.tokens",
    "bot.exts.message_submit",
    "bot.exts.delivery",
    "bot.exts.answers",
    "bot.exts.progress",
    "bot.exts.schedule",
    "bot.exts.roles",
    "bot.exts.admin",
    "bot.exts.privacy",
    "bot.exts.solutions",
    "bot.exts.help",
    "bot.exts.stale_components",
    "bot.exts.metrics_events",
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
        self._refusals: set[asyncio.Task[None]] = set()

    async def setup_hook(self) -> None:
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

    async def drain(self, timeout_s: float) -> None:
        """Before ``close`` on a graceful stop: take no new interactions, and give the work in
        flight (cogs that ``Drains``: verdict deliveries) at most ``timeout_s`` to finish;
        ``close`` then cancels whatever is left, which the database picks up after the restart.
        """
        self._stop_taking_interactions()
        drains = [cog.drain() for cog in self.cogs.values() if isinstance(cog, Drains)]
        tasks = [asyncio.ensure_future(drain) for drain in drains]
        if not tasks:
            return
        _, left = await asyncio.wait(tasks, timeout=timeout_s)
        for task in left:
            task.cancel()
        if left:
            log.warning("work still in flight after %g s; abandoned to the next start", timeout_s)

    def _stop_taking_interactions(self) -> None:
        """Every interaction from now on gets a short ephemeral answer instead of running: a
        command started now would be cut off by the close."""
        state = self._connection

        def refuse(data: Any) -> None:
            interaction = discord.Interaction(data=data, state=state)
            if interaction.type is discord.InteractionType.autocomplete:
                return  # cannot carry a message
            task = asyncio.create_task(self._answer_restarting(interaction))
            self._refusals.add(task)
            task.add_done_callback(self._refusals.discard)

        state.parsers["INTERACTION_CREATE"] = refuse

    async def _answer_restarting(self, interaction: discord.Interaction) -> None:
        try:
            await interaction.response.send_message(RESTARTING, ephemeral=True)
        except Exception as exc:  # the client may be closing under it: the answer is a courtesy
            log.info("interaction %d not answered while stopping: %s", interaction.id, exc)
