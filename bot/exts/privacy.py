"""/privacy hide, show, share, export and delete: a member's own data in this server, every
reply ephemeral.

The delete confirmation's buttons are a ``DynamicItem``: the custom id carries the member and the
moment the confirmation expires, so a click is answered the same way whether the bot restarted
since or not, and a late click is told that it came too late.
"""

from __future__ import annotations

import io
import logging
import re
from datetime import timedelta
from typing import Any, Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot import clock
from bot.app import BrrrBot
from bot.db.engine import checkpoint_wal
from bot.exts.common import bot_of, display_name, guild_id_of
from bot.exts.error_replies import AnswersErrors
from bot.presentation.wording import plural
from bot.progress import privacy, solutions

log = logging.getLogger(__name__)

CONFIRM_FOR = timedelta(minutes=10)
Action = Literal["delete", "cancel"]

HIDDEN = (
    "You are now hidden from this server's leaderboards, weekly posts and charts; the ranks close "
    "up around you. `/profile` still shows you your own rank. `/privacy show` brings you back."
)
ALREADY_HIDDEN = "You were already hidden from the boards. `/privacy show` brings you back."
SHOWN = "You are back on this server's leaderboards, weekly posts and charts."
NOT_HIDDEN = "You are not hidden: you already appear on the boards."
SHARING = (
    "You now share your passing solutions: members who passed the same task can read one of "
    "yours with `/solutions` (your fastest on a speed-ranked task, else your newest). "
    "`/privacy share off` hides them again at once."
)
ALREADY_SHARING = "You already share your passing solutions. `/privacy share off` stops it."
NOT_SHARING = (
    "Your solutions are no longer shared: nobody can open them with `/solutions` from now on. "
    "(What someone already downloaded stays with them.)"
)
ALREADY_PRIVATE = "Your solutions were not shared. `/privacy share on` shares them."
NOTHING_KEPT = "The bot keeps nothing about you in this server."
CONFIRM = (
    "**Delete your data in this server?** Nobody can undo this, moderators included.\n"
    "• Every submission you made here is deleted: the code, its verdicts and grading records "
    "(solutions you shared can no longer be read).\n"
    "• Your XP history (quiz results and completions included) is unlinked from you: the ledger "
    "is append-only, so its rows stay, anonymous, and count on no leaderboard or total.\n"
    "• Your name and user id leave the bot's records of this server, and the bot takes back "
    "the roles it gave you.\n"
    "If you use the bot here again, you start from 0 XP. An audit entry records that a deletion "
    "happened, not who asked. Want a copy first? Use `/privacy export`.\n"
    "This confirmation expires {expires}."
)
EXPIRED = "This confirmation expired, and nothing was deleted. Run `/privacy delete` again."
CANCELLED = "Cancelled: nothing was deleted."
NOT_YOURS = "This confirmation is someone else's: run `/privacy delete` for your own data."
NOTHING_LEFT = "Nothing of yours is left to delete in this server."


@app_commands.guild_only()
class Privacy(
    commands.GroupCog,
    group_name="privacy",
    group_description="Your data in this server: hide it, share your solutions, export or delete",
):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(
        name="hide", description="Leave the leaderboards, weekly posts and charts"
    )
    async def hide(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)  # before the write
        changed = await self.bot.services.write(
            privacy.hide,
            guild_id=guild_id_of(interaction),
            user_id=interaction.user.id,
            display_name=display_name(interaction.user),
        )
        await interaction.edit_original_response(content=HIDDEN if changed else ALREADY_HIDDEN)

    @app_commands.command(name="show", description="Appear on the leaderboards again")
    async def show(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        changed = await self.bot.services.write(
            privacy.show, guild_id=guild_id_of(interaction), user_id=interaction.user.id
        )
        await interaction.edit_original_response(content=SHOWN if changed else NOT_HIDDEN)

    @app_commands.command(
        name="share", description="Let members who passed a task read your passing solution"
    )
    @app_commands.describe(state="on: members who passed a task may read yours; off: nobody")
    async def share(self, interaction: discord.Interaction, state: Literal["on", "off"]) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        on = state == "on"
        changed = await self.bot.services.write(
            solutions.set_sharing,
            guild_id=guild_id_of(interaction),
            user_id=interaction.user.id,
            display_name=display_name(interaction.user),
            on=on,
        )
        if on:
            text = SHARING if changed else ALREADY_SHARING
        else:
            text = NOT_SHARING if changed else ALREADY_PRIVATE
        await interaction.edit_original_response(content=text)

    @app_commands.command(name="export", description="Everything the bot keeps about you, as JSON")
    async def export(self, interaction: discord.Interaction) -> None:
        guild_id = guild_id_of(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        data = await self.bot.services.read(
            privacy.export, guild_id=guild_id, user_id=interaction.user.id, now=clock.now()
        )
        if data is None:
            await interaction.edit_original_response(content=NOTHING_KEPT)
            return
        exported = privacy.export_file(data, max_bytes=interaction.filesize_limit)
        if exported is None:
            await interaction.edit_original_response(
                content="Your export is larger than this server's upload limit "
                f"({interaction.filesize_limit / 2**20:.0f} MiB) even compressed, so Discord "
                "would refuse it. Ask whoever runs the bot for a copy."
            )
            return
        await interaction.edit_original_response(
            content=f"Everything the bot keeps about you in this server: "
            f"{plural(len(data.submissions), 'submission')} with their code, "
            f"{plural(len(data.ledger), 'ledger row')}.",
            attachments=[discord.File(io.BytesIO(exported.data), filename=exported.filename)],
        )

    @app_commands.command(name="delete", description="Delete your data in this server, for good")
    async def delete(self, interaction: discord.Interaction) -> None:
        expires = int((clock.now() + CONFIRM_FOR).timestamp())
        view = discord.ui.View(timeout=None)  # the buttons answer by custom id, not this object
        for action in ("delete", "cancel"):
            view.add_item(ConfirmButton(action, interaction.user.id, expires))
        await interaction.response.send_message(
            CONFIRM.format(expires=f"<t:{expires}:R>"), view=view, ephemeral=True
        )


class ConfirmButton(
    AnswersErrors,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"brrr:privacy:(?P<action>delete|cancel):(?P<user_id>[0-9]{1,20}):"
    r"(?P<expires>[0-9]{1,12})",
):
    """The "Delete my data" or "Cancel" button of one member's confirmation, valid until
    ``expires`` (Unix seconds, by the bot's clock)."""

    def __init__(self, action: Action, user_id: int, expires: int) -> None:
        delete = action == "delete"
        super().__init__(
            discord.ui.Button(
                label="Delete my data" if delete else "Cancel",
                style=discord.ButtonStyle.danger if delete else discord.ButtonStyle.secondary,
                custom_id=f"brrr:privacy:{action}:{user_id}:{expires}",
            )
        )
        self.action: Action = action
        self.user_id = user_id
        self.expires = expires

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction,
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> ConfirmButton:
        action: Action = "delete" if match["action"] == "delete" else "cancel"
        return cls(action, int(match["user_id"]), int(match["expires"]))

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        if interaction.user.id == self.user_id:
            return True
        await interaction.response.send_message(NOT_YOURS, ephemeral=True)
        return False

    async def clicked(self, interaction: discord.Interaction) -> None:
        if self.action == "cancel":
            await interaction.response.edit_message(content=CANCELLED, view=None)
        elif clock.now().timestamp() > self.expires:
            await interaction.response.edit_message(content=EXPIRED, view=None)
        else:
            await _delete(interaction)


async def _delete(interaction: discord.Interaction) -> None:
    """The member pressed "Delete my data" in time."""
    services = bot_of(interaction).services
    guild_id = guild_id_of(interaction)
    await interaction.response.defer()  # the WAL checkpoint may wait for a reader
    deletion = await services.write(
        privacy.delete_member_data, guild_id=guild_id, user_id=interaction.user.id, now=clock.now()
    )
    if not deletion.found:
        await interaction.edit_original_response(content=NOTHING_LEFT, view=None)
        return
    if await checkpoint_wal(services.engine) is False:
        log.warning(
            "privacy delete: a reader kept the WAL from being emptied; its old page images "
            "stay there until SQLite writes over them"
        )
    bot_of(interaction).dispatch("xp_changed", guild_id)  # roles to take back
    await interaction.edit_original_response(
        content=f"Done. Deleted {plural(deletion.submissions, 'submission')} with their code "
        f"and {plural(deletion.grading_jobs, 'grading record')}. Your XP history "
        f"({plural(deletion.ledger_rows_anonymised, 'ledger row')}) stays in the append-only "
        "ledger, no longer linked to you. The bot takes back the roles it gave you shortly.",
        view=None,
    )


async def setup(bot: BrrrBot) -> None:
    bot.add_dynamic_items(ConfirmButton)
    await bot.add_cog(Privacy(bot))
