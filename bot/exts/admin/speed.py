"""/admin speed-void and /admin speed-restore: a moderator strikes a speed result, or puts it back.

The rules are ``bot.progress.speed_voids``'.  The void (audited) is one transaction, its
notice due in the same row; the member's DM follows the commit, sent once: the notice is
claimed first (``claim_notice``), and handed back if Discord refuses the DM.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import discord
from discord import app_commands

from bot import clock
from bot.exts.admin.shared import AdminBase, is_moderator, reply
from bot.exts.common import UserFacingError, bot_of, guild_id_of
from bot.presentation.speed_void_words import (
    recent_label,
    refusal_text,
    restored_text,
    void_notice_text,
    voided_text,
)
from bot.progress.ledger import REASON_CHARS
from bot.progress.speed_voids import (
    VoidRefused,
    claim_notice,
    recent_results,
    release_notice,
    restore,
    void,
)

log = logging.getLogger(__name__)


def _results_autocomplete(
    *, voided: bool
) -> Callable[[discord.Interaction, str], Awaitable[list[app_commands.Choice[int]]]]:
    """Autocomplete over the server's latest speed results (void ones, or not), for moderators."""

    async def complete(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[int]]:
        bot = bot_of(interaction)
        # the /admin check runs for commands, not for their autocomplete: a member who is no
        # moderator sees nothing (hidden members' results are listed here)
        if interaction.guild_id is None or not await is_moderator(interaction, bot):
            return []
        recent = await bot.services.read(recent_results, interaction.guild_id, voided=voided)
        needle = current.casefold().strip().lstrip("#")
        return [
            app_commands.Choice(name=label, value=result.submission_id)
            for result in recent
            if needle in (label := recent_label(result)).casefold()
        ]

    return complete


class SpeedVoidCommands(AdminBase):
    @app_commands.command(
        name="speed-void", description="Strike a speed result from every board, with a reason"
    )
    @app_commands.describe(
        submission="the submission whose speed result to strike (recent ones are listed)",
        reason="why: the member is told",
    )
    @app_commands.autocomplete(submission=_results_autocomplete(voided=False))
    async def speed_void(
        self,
        interaction: discord.Interaction,
        submission: app_commands.Range[int, 1],
        reason: app_commands.Range[str, 1, REASON_CHARS],
    ) -> None:
        if not reason.strip() or len(reason) > REASON_CHARS:  # Discord's client enforces Range
            raise UserFacingError(f"Give a reason of 1 to {REASON_CHARS} characters.")
        guild_id = guild_id_of(interaction)
        try:
            change = await self.bot.services.write(
                void,
                guild_id=guild_id,
                submission_id=submission,
                reason=reason,
                actor_user_id=interaction.user.id,
                now=clock.now(),
            )
        except VoidRefused as refused:
            raise UserFacingError(refusal_text(refused.refusal)) from None
        told = await self._tell(interaction, submission)
        await reply(interaction, voided_text(change, reason.strip(), told=told))

    @app_commands.command(name="speed-restore", description="Put a voided speed result back")
    @app_commands.describe(submission="the submission whose voided result to restore")
    @app_commands.autocomplete(submission=_results_autocomplete(voided=True))
    async def speed_restore(
        self, interaction: discord.Interaction, submission: app_commands.Range[int, 1]
    ) -> None:
        try:
            change = await self.bot.services.write(
                restore,
                guild_id=guild_id_of(interaction),
                submission_id=submission,
                actor_user_id=interaction.user.id,
                now=clock.now(),
            )
        except VoidRefused as refused:
            raise UserFacingError(refusal_text(refused.refusal)) from None
        await reply(interaction, restored_text(change))

    async def _tell(self, interaction: discord.Interaction, submission_id: int) -> bool:
        """DM the member their void's notice, once; whether it went out (or was out already)."""
        notice = await self.bot.services.write(
            claim_notice, submission_id=submission_id, now=clock.now()
        )
        if notice is None:
            return True  # told already
        server = interaction.guild.name if interaction.guild is not None else "the server"
        try:
            user = self.bot.get_user(notice.user_id) or await self.bot.fetch_user(notice.user_id)
            await user.send(
                void_notice_text(notice, server=server),
                allowed_mentions=discord.AllowedMentions.none(),
            )
        except discord.HTTPException as exc:
            log.info("submission %d: the void notice was not sent: %s", submission_id, exc)
            await self.bot.services.write(release_notice, submission_id=submission_id)
            return False
        return True
