"""What every /admin command module shares: the bot, the audit trail and the configured server."""

from __future__ import annotations

import logging

import discord

from bot import audit, guilds
from bot.app import BrrrBot
from bot.db.models import Guild
from bot.exts.common import UserFacingError, guild_id_of
from bot.exts.schedule import Schedule
from bot.outage import describe, is_database_unavailable
from bot.presentation.limits import CONTENT, truncate

log = logging.getLogger(__name__)
#: said after what was done when its audit entry could not be written
NOT_AUDITED = "The audit log could not record it: the bot's database is unavailable right now."


async def reply(interaction: discord.Interaction, text: str) -> None:
    """Fill the /admin answer the group's check deferred (ephemeral), mentioning nobody."""
    await interaction.edit_original_response(
        content=truncate(text, CONTENT), allowed_mentions=discord.AllowedMentions.none()
    )


async def is_moderator(interaction: discord.Interaction, bot: BrrrBot) -> bool:
    """Whether the caller may use /admin here: Manage Server or the moderator role."""
    member = interaction.user
    manage = isinstance(member, discord.Member) and member.guild_permissions.manage_guild
    roles = [role.id for role in getattr(member, "roles", [])]
    guild = await bot.services.guild(guild_id_of(interaction))
    return guilds.is_moderator(manage_guild=manage, role_ids=roles, guild=guild)


class AdminBase:
    """Mixed into the one ``Admin`` cog; each command module adds its commands to it."""

    bot: BrrrBot

    def _schedule(self) -> Schedule:
        cog = self.bot.get_cog("Schedule")
        assert isinstance(cog, Schedule)
        return cog

    async def _done_and_audited(
        self,
        interaction: discord.Interaction,
        done: str,
        action: str,
        target: str,
        **details: object,
    ) -> None:
        """Record in the audit log what was done outside the database (a post sent), then say
        ``done``; if the database is away by then, say that the post stands unrecorded rather
        than that nothing happened."""
        try:
            await audit.record(
                self.bot.services.sessions,
                guild_id=guild_id_of(interaction),
                actor_user_id=interaction.user.id,
                action=action,
                target=target,
                details=details,
            )
        except Exception as exc:
            if not is_database_unavailable(exc):
                raise
            log.warning("%s done but not audited: database unavailable: %s", action, describe(exc))
            done += f" {NOT_AUDITED}"
        await reply(interaction, done)

    async def _configured(self, interaction: discord.Interaction) -> Guild:
        guild = await self.bot.services.guild(guild_id_of(interaction))
        if guild is None or guild.quest_channel_id is None:
            raise UserFacingError("No quest channel is configured yet: run `/admin setup` first.")
        return guild
