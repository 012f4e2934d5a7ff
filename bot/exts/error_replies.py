"""One place that turns command and component errors into replies.

Expected problems (``UserFacingError``, failed checks) are shown as they are, and a rule of
intake that said no (``Refused``) in the cogs' words for it (``refusal_replies``);
the database being away (``bot.outage``: down, restarting, locked past the busy timeout)
in the words of ``UNAVAILABLE_REPLY``, "nothing was saved" (every command's writes are one
transaction that an outage rolls back; the database error is raised before its commit);
anything else is logged with a short reference and the member sees only
"something went wrong (ref XYZ)", ephemerally.  Buttons and selects (``AnswersErrors``), modals
and views (``answer_error``) get the same treatment: discord.py only logs their errors, and the
member would see "This interaction failed", or a reply thinking forever.
"""

from __future__ import annotations

import logging
import secrets
import sqlite3

import discord
from discord import app_commands
from discord.ext import commands
from sqlalchemy.exc import OperationalError

from bot.exts.common import UserFacingError
from bot.exts.refusal_replies import refusal_reply
from bot.intake.refusals import Refused
from bot.logs import bind_context, log_context
from bot.outage import UNAVAILABLE_REPLY, describe, is_database_unavailable

log = logging.getLogger(__name__)


async def reply_ephemeral(interaction: discord.Interaction, message: str) -> None:
    """Answer whether or not the interaction was already acknowledged."""
    try:
        if interaction.response.is_done():
            await interaction.edit_original_response(content=message, embeds=[], attachments=[])
        else:
            await interaction.response.send_message(message, ephemeral=True)
    except discord.HTTPException:
        log.warning("could not tell %s: %s", interaction.user, message)


async def on_app_command_error(
    interaction: discord.Interaction, error: app_commands.AppCommandError
) -> None:
    refused = getattr(error, "original", None)
    if isinstance(refused, Refused):
        await reply_ephemeral(interaction, refusal_reply(refused.refusal))
    elif isinstance(error, UserFacingError):
        await reply_ephemeral(interaction, str(error))
    elif isinstance(error, app_commands.CheckFailure):
        await reply_ephemeral(interaction, str(error) or "You may not use this command.")
    elif isinstance(error, app_commands.TransformerError):
        await reply_ephemeral(interaction, f"I could not understand `{error.value}`.")
    else:
        what = interaction.command.qualified_name if interaction.command else "?"
        await _unexpected(interaction, getattr(error, "original", error), f"command {what}")


async def _unexpected(interaction: discord.Interaction, error: BaseException, what: str) -> None:
    ref = secrets.token_hex(3).upper()
    ids = {"ref": ref, "guild_id": interaction.guild_id}  # fields of a JSON log line
    if is_database_unavailable(error):  # an outage, not a bug: one line, no traceback
        log.warning("%s: database unavailable (ref %s): %s", what, ref, describe(error), extra=ids)
        await reply_ephemeral(interaction, UNAVAILABLE_REPLY)
        return
    log.error("%s failed (ref %s)", what, ref, exc_info=error, extra=ids)
    await reply_ephemeral(interaction, _storage_message(error, ref) or _GENERIC.format(ref))


async def answer_error(interaction: discord.Interaction, error: Exception, what: str) -> None:
    """An error of a button, select or modal, answered like a command's: discord.py only logs
    those, and the member would be left with "This interaction failed" or endless thinking."""
    if isinstance(error, UserFacingError):
        await reply_ephemeral(interaction, str(error))
    else:
        await _unexpected(interaction, error, what)


class AnswersErrors:
    """Mixed in before ``discord.ui.DynamicItem``: the item's ``clicked`` runs, and any error
    is answered like a command's instead of leaving the click unanswered."""

    async def clicked(self, interaction: discord.Interaction) -> None:
        raise NotImplementedError

    async def callback(self, interaction: discord.Interaction) -> None:
        with log_context(guild_id=interaction.guild_id):
            try:
                await self.clicked(interaction)
            except Exception as error:
                await answer_error(interaction, error, f"component {type(self).__name__}")


async def name_the_guild(interaction: discord.Interaction) -> bool:
    """The command tree's global check, which always passes: it runs first in the task that
    handles the interaction, so every log line of that task names the server."""
    bind_context(guild_id=interaction.guild_id)
    return True


_GENERIC = "Something went wrong (ref {}). It has been logged."


def _storage_message(error: BaseException, ref: str) -> str | None:
    """Say so when the database refused the write: the member should know nothing was saved."""
    if not isinstance(error, OperationalError | sqlite3.OperationalError):
        return None
    text = str(error).lower()
    if "disk is full" in text or "no space" in text:
        return (
            f"The bot's storage is full, so nothing was saved (ref {ref}). "
            "Please tell a moderator, and try again once space has been freed."
        )
    return None


async def setup(bot: commands.Bot) -> None:
    """Every command's errors go through ``on_app_command_error``; its log lines name the server."""
    bot.tree.on_error = on_app_command_error
    bot.tree.interaction_check = name_the_guild
