"""/admin xp: a moderator grants or revokes XP, with a reason."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import discord
from discord import app_commands

from bot import clock
from bot.exts.admin.shared import AdminBase, reply
from bot.exts.common import UserFacingError, display_name, guild_id_of
from bot.presentation.safety import no_pings
from bot.progress.grants import grant_to_user

MAX_GRANT = 10_000


class XpCommands(AdminBase):
    @app_commands.command(name="xp", description="Grant (positive) or revoke (negative) XP")
    @app_commands.describe(member="who", amount="XP to add, negative to take away", reason="why")
    async def xp(
        self,
        interaction: discord.Interaction,
        member: discord.Member,
        amount: app_commands.Range[int, -MAX_GRANT, MAX_GRANT],
        reason: app_commands.Range[str, 1, 200],
    ) -> None:
        if amount == 0:
            raise UserFacingError("A grant of 0 XP changes nothing.")
        if not -MAX_GRANT <= amount <= MAX_GRANT:  # Range is only enforced by Discord's client
            raise UserFacingError(
                f"{amount:+,} XP is out of range: grant or revoke at most {MAX_GRANT:,} XP at once."
            )
        guild_id = guild_id_of(interaction)
        guild = await self.bot.services.guild(guild_id)
        result = await self.bot.services.write(
            grant_to_user,
            guild_id=guild_id,
            user_id=member.id,
            display_name=display_name(member),
            amount=amount,
            reason=reason,
            actor_user_id=interaction.user.id,
            request_id=interaction.id,
            tz=ZoneInfo(guild.timezone if guild else "UTC"),
            now=clock.now(),
        )
        self.bot.dispatch("xp_changed", guild_id)
        clamped = ""
        if result.applied != result.requested:
            clamped = f" (asked {result.requested:+,}; a total cannot go below 0)"
        await reply(
            interaction,
            f"{result.applied:+,} XP for {member.mention}{clamped}: their total is now "
            f"{result.new_total:,}. Reason: {no_pings(reason)}",
        )
