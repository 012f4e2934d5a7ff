"""/admin token-revoke: a moderator revokes a member's API token (e.g. one that leaked)."""

from __future__ import annotations

import discord
from discord import app_commands

from bot import clock
from bot.exts.admin.shared import AdminBase, reply
from bot.exts.common import guild_id_of
from bot.rest_api import tokens


class TokenCommands(AdminBase):
    @app_commands.command(name="token-revoke", description="Revoke a member's API token")
    @app_commands.describe(member="whose token")
    async def token_revoke(self, interaction: discord.Interaction, member: discord.Member) -> None:
        revoked = await self.bot.services.write(
            tokens.revoke_for_moderator,
            guild_id_of(interaction),
            member.id,
            actor_user_id=interaction.user.id,
            now=clock.now(),
        )
        text = (
            f"{member.mention}'s API token is revoked."
            if revoked
            else f"{member.mention} has no live API token."
        )
        await reply(interaction, text)
