"""/admin quest-add, quest-disable and schedule: the server's own map."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any, Literal, Self, cast
from zoneinfo import ZoneInfo

import discord
from discord import app_commands

from bot import clock
from bot.content import check_quest_text
from bot.content.problems import Problem
from bot.curriculum import drafts, map_edits
from bot.exts.admin.shared import AdminBase, reply
from bot.exts.common import UserFacingError, bot_of, find_quest, guild_id_of, quest_autocomplete
from bot.exts.error_replies import AnswersErrors
from bot.presentation.limits import batch_embeds, truncate
from bot.presentation.quest_embeds import quest_embeds
from bot.presentation.safety import no_pings
from bot.progress.periods import local_date

MAX_QUEST_YAML = 256 * 1024
PROBLEMS_SHOWN = 15
EXPIRED = (
    f"This preview expired ({drafts.LIFETIME // timedelta(minutes=1)} minutes): "
    "upload the file again with /admin quest-add."
)
NOT_YOURS = "Only the moderator who uploaded this quest can publish or cancel it."

DraftAction = Literal["publish", "cancel"]


class ContentCommands(AdminBase):
    @app_commands.command(name="quest-add", description="Add a quest from a YAML file")
    @app_commands.describe(file="one quest in the same YAML format as quests/*.yaml")
    async def quest_add(self, interaction: discord.Interaction, file: discord.Attachment) -> None:
        guild_id = guild_id_of(interaction)
        if not file.filename.lower().endswith((".yaml", ".yml")):
            raise UserFacingError("Attach the quest as a .yaml file.")
        if file.size > MAX_QUEST_YAML:
            raise UserFacingError(
                f"That file is over {MAX_QUEST_YAML // 1024} KiB; a quest is smaller."
            )
        try:
            text = (await file.read()).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserFacingError(
                f"`{truncate(file.filename, 80)}` is not UTF-8 text (byte {exc.start})."
            ) from None
        quest, problems = check_quest_text(text, file.filename, self.bot.services.content)
        if quest is None:
            raise UserFacingError(_problems_message("The quest has problems:", problems))
        guild_map = await self.bot.services.guild_map(guild_id)
        replaces = any(q.id == quest.id for q in guild_map.quests)
        preview = quest_embeds(
            quest,
            phase_title=guild_map.phase_titles.get(quest.phase, quest.phase),
            library=self.bot.services.content.library,
            heading="Preview" + (" (replaces the current version)" if replaces else ""),
        )
        draft = await self.bot.services.write(
            drafts.save_draft,
            guild_id=guild_id,
            moderator_user_id=interaction.user.id,
            filename=file.filename,
            text=text,
            now=clock.now(),
        )
        first, *rest = batch_embeds(preview)
        more = f" (preview shortened: {len(rest)} more message(s) of text)" if rest else ""
        await interaction.edit_original_response(
            content=f"Publish this quest to the server's map?{more}",
            embeds=first,
            view=draft_buttons(draft.key),
        )

    async def publish_draft(self, interaction: discord.Interaction, key: str) -> None:
        """Publish clicked: check the stored quest again (the map may have changed), publish it
        and forget the draft."""
        draft = await self._open_draft(interaction, key)
        if draft is None:
            return
        quest, problems = check_quest_text(draft.text, draft.filename, self.bot.services.content)
        if quest is None:
            await self.bot.services.write(drafts.delete_draft, draft.id)
            heading = "The quest no longer passes the checks, so nothing was published:"
            await interaction.edit_original_response(
                content=_problems_message(heading, problems), embeds=[], view=None
            )
            return
        guild_id = guild_id_of(interaction)
        await self.bot.services.write(
            map_edits.publish_draft,
            guild_id=guild_id,
            quest=quest,
            draft_id=draft.id,
            actor_user_id=interaction.user.id,
            now=clock.now(),
        )
        self.bot.services.forget_map(guild_id)
        await interaction.edit_original_response(
            content=f"Published `{quest.id}`: it is on this server's map now.",
            embeds=[],
            view=None,
        )

    async def cancel_draft(self, interaction: discord.Interaction, key: str) -> None:
        draft = await self._open_draft(interaction, key)
        if draft is None:
            return
        await self.bot.services.write(drafts.delete_draft, draft.id)
        await interaction.edit_original_response(
            content="Cancelled; nothing changed.", embeds=[], view=None
        )

    async def _open_draft(self, interaction: discord.Interaction, key: str) -> drafts.Draft | None:
        """The clicked preview's draft, or None once the click has been answered: expired
        (the preview says so and loses its buttons) or someone else's."""
        draft = await self.bot.services.write(drafts.open_draft, key, now=clock.now())
        if draft is None:
            await interaction.edit_original_response(content=EXPIRED, embeds=[], view=None)
            return None
        if (draft.guild_id, draft.moderator_user_id) != (interaction.guild_id, interaction.user.id):
            await interaction.followup.send(NOT_YOURS, ephemeral=True)
            return None
        return draft

    @app_commands.command(name="quest-disable", description="Remove a quest from this server's map")
    @app_commands.describe(quest="the quest to disable")
    @app_commands.autocomplete(quest=quest_autocomplete)
    async def quest_disable(self, interaction: discord.Interaction, quest: str) -> None:
        guild_id = guild_id_of(interaction)
        found = find_quest(await self.bot.services.guild_map(guild_id), quest)
        await self.bot.services.write(
            map_edits.disable_quest,
            guild_id=guild_id,
            quest=found,
            actor_user_id=interaction.user.id,
            now=clock.now(),
        )
        self.bot.services.forget_map(guild_id)
        await reply(interaction, f"`{found.id}` is no longer on this server's map.")

    @app_commands.command(name="schedule", description="Post a given quest on a given date")
    @app_commands.describe(quest="the quest", date="local date, YYYY-MM-DD")
    @app_commands.autocomplete(quest=quest_autocomplete)
    async def schedule(self, interaction: discord.Interaction, quest: str, date: str) -> None:
        guild_id = guild_id_of(interaction)
        found = find_quest(await self.bot.services.guild_map(guild_id), quest)
        try:
            day = _parse_date(date)
        except ValueError:
            raise UserFacingError(
                f"`{truncate(date, 20)}` is not a date like 2026-12-01."
            ) from None
        guild = await self.bot.services.guild(guild_id)
        today = local_date(clock.now(), ZoneInfo(guild.timezone if guild else "UTC"))
        if day < today:
            raise UserFacingError(
                f"{day.isoformat()} is in the past (today is {today.isoformat()})."
            )
        await self.bot.services.write(
            map_edits.schedule_quest,
            guild_id=guild_id,
            quest_id=found.id,
            day=day,
            actor_user_id=interaction.user.id,
            now=clock.now(),
        )
        self.bot.services.forget_map(guild_id)
        await reply(interaction, f"`{found.id}` will be the quest of {day.isoformat()}.")


class DraftButton(
    AnswersErrors,
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]],
    template=r"brrr:draft:(?P<action>publish|cancel):(?P<key>[0-9]{1,18}-[0-9]{1,12})",
):
    """Publish or Cancel under a quest-add preview.  The draft's key is in the custom id and the
    quest in the database, so a click works after a restart.  A click is acknowledged before
    the draft is read (its answer edits the preview): a slow database cannot outlast Discord's
    3 s."""

    def __init__(self, action: DraftAction, key: str) -> None:
        label, style = _DRAFT_BUTTONS[action]
        super().__init__(
            discord.ui.Button(label=label, style=style, custom_id=f"brrr:draft:{action}:{key}")
        )
        self.action = action
        self.key = key

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> Self:
        return cls(cast(DraftAction, match["action"]), match["key"])

    async def clicked(self, interaction: discord.Interaction) -> None:
        cog = bot_of(interaction).get_cog("Admin")
        assert isinstance(cog, ContentCommands)
        await interaction.response.defer()
        if self.action == "publish":
            await cog.publish_draft(interaction, self.key)
        else:
            await cog.cancel_draft(interaction, self.key)


_DRAFT_BUTTONS: dict[DraftAction, tuple[str, discord.ButtonStyle]] = {
    "publish": ("Publish", discord.ButtonStyle.success),
    "cancel": ("Cancel", discord.ButtonStyle.secondary),
}


def draft_buttons(key: str) -> discord.ui.View:
    """The preview's buttons.  No timeout: a view that times out unregisters its dynamic items,
    and an expired draft is refused by the click itself."""
    view = discord.ui.View(timeout=None)
    view.add_item(DraftButton("publish", key))
    view.add_item(DraftButton("cancel", key))
    return view


def _problems_message(heading: str, problems: Sequence[Problem]) -> str:
    lines = "\n".join(f"• {no_pings(str(p))}" for p in problems[:PROBLEMS_SHOWN])
    hidden = len(problems) - PROBLEMS_SHOWN
    more = f"\n… and {hidden} more" if hidden > 0 else ""
    return truncate(f"{heading}\n{lines}{more}", 1900)


def _parse_date(text: str) -> date:
    return date.fromisoformat(text.strip())
