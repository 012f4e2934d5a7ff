"""What every /admin command module shares: the bot, the audit trail and the configured server."""

from __future__ import annotations

import discord

from bot import audit
from bot.app import BrrrBot
from bot.db.models import Guild
from bot.exts.common import UserFacingError, guild_id_of
from bot.exts.schedule import Schedule


class AdminBase:
    """Mixed into the one ``Admin`` cog; each command module adds its commands to it."""

    bot: BrrrBot

    def _schedule(self) -> Schedule:
        cog = self.bot.get_cog("Schedule")
        assert isinstance(cog, Schedule)
        return cog

    async def _audit(
        self, interaction: discord.Interaction, action: str, target: str, **details: object
    ) -> None:
        await audit.record(
            self.bot.services.sessions,
            guild_id=guild_id_of(interaction),
            actor_user_id=interaction.user.id,
            action=action,
            target=target,
            details=details,
        )

    async def _configured(self, interaction: discord.Interaction) -> Guild:
        guild = await self.bot.services.guild(guild_id_of(interaction))
        if guild is None or guild.quest_channel_id is None:
            raise UserFacingError("No quest channel is configured yet: run `/admin setup` first.")
        return guild
