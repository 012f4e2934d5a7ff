"""/admin regrade and /admin deliveries: a submission graded again, verdicts that never arrived."""

from __future__ import annotations

import discord
from discord import app_commands

from bot.delivery.failures import failed_deliveries
from bot.exts.admin.shared import AdminBase, reply
from bot.exts.common import guild_id_of
from bot.intake.regrade import regrade as regrade_submission
from bot.intake.submission_input import UploadLimits
from bot.presentation.failed_deliveries import failed_deliveries_text


class GradingCommands(AdminBase):
    @app_commands.command(name="regrade", description="Grade a submission again")
    @app_commands.describe(submission="the submission number, e.g. 42")
    async def regrade(
        self, interaction: discord.Interaction, submission: app_commands.Range[int, 1]
    ) -> None:
        guild_id = guild_id_of(interaction)
        await regrade_submission(  # its Refused is answered by bot.exts.error_replies
            self.bot.services.sessions,
            guild_id=guild_id,
            submission_id=submission,
            guild_map=await self.bot.services.guild_map(guild_id),
            limits=UploadLimits.of(self.bot.services.settings),
            moderator_user_id=interaction.user.id,
        )
        await reply(
            interaction,
            f"Submission #{submission} is queued for grading again; the member gets the new "
            "verdict by DM, and XP follows the better of the two.",
        )

    @app_commands.command(name="deliveries", description="Verdicts the bot gave up delivering")
    async def deliveries(self, interaction: discord.Interaction) -> None:
        failed = await self.bot.services.read(failed_deliveries, guild_id_of(interaction))
        await reply(interaction, failed_deliveries_text(failed))
