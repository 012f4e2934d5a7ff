"""/admin quest-add, quest-disable and schedule: the server's own map."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

import discord
from discord import app_commands

from bot import clock
from bot.content import Quest, check_quest_text
from bot.curriculum import map_edits
from bot.exts.admin.base import AdminBase
from bot.exts.common import UserFacingError, find_quest, guild_id_of, quest_autocomplete
from bot.presentation.limits import batch_embeds, truncate
from bot.presentation.quests import quest_embeds
from bot.presentation.safety import no_pings
from bot.progress.periods import local_date

MAX_QUEST_YAML = 256 * 1024


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
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            text = (await file.read()).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserFacingError(
                f"`{truncate(file.filename, 80)}` is not UTF-8 text (byte {exc.start})."
            ) from None
        quest, problems = check_quest_text(text, file.filename, self.bot.services.content)
        if quest is None:
            lines = "\n".join(f"• {no_pings(str(p))}" for p in problems[:15])
            more = f"\n… and {len(problems) - 15} more" if len(problems) > 15 else ""
            raise UserFacingError(truncate(f"The quest has problems:\n{lines}{more}", 1900))
        guild_map = await self.bot.services.guild_map(guild_id)
        replaces = any(q.id == quest.id for q in guild_map.quests)
        preview = quest_embeds(
            quest,
            phase_title=guild_map.phase_titles.get(quest.phase, quest.phase),
            library=self.bot.services.content.library,
            heading="Preview" + (" (replaces the current version)" if replaces else ""),
        )
        view = PublishView(self, interaction.user.id, quest)
        first, *rest = batch_embeds(preview)
        more = f" (preview shortened: {len(rest)} more message(s) of text)" if rest else ""
        await interaction.edit_original_response(
            content=f"Publish this quest to the server's map?{more}", embeds=first, view=view
        )

    async def publish(self, interaction: discord.Interaction, quest: Quest) -> None:
        guild_id = guild_id_of(interaction)
        await self.bot.services.write(
            map_edits.publish_quest,
            guild_id=guild_id,
            quest=quest,
            actor_user_id=interaction.user.id,
            now=clock.now(),
        )
        self.bot.services.forget_map(guild_id)

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
        await interaction.response.send_message(
            f"`{found.id}` is no longer on this server's map.", ephemeral=True
        )

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
        await interaction.response.send_message(
            f"`{found.id}` will be the quest of {day.isoformat()}.", ephemeral=True
        )


class PublishView(discord.ui.View):
    def __init__(self, cog: ContentCommands, moderator_id: int, quest: Quest) -> None:
        super().__init__(timeout=15 * 60)
        self.cog = cog
        self.moderator_id = moderator_id
        self.quest = quest

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id != self.moderator_id:
            await interaction.response.send_message(
                "Only the moderator who uploaded it can publish it.", ephemeral=True
            )
            return False
        return True

    @discord.ui.button(label="Publish", style=discord.ButtonStyle.success)
    async def publish(self, interaction: discord.Interaction, _: discord.ui.Button) -> None:
        await self.cog.publish(interaction, self.quest)
        self.stop()
        await interaction.response.edit_message(
            content=f"Published `{self.quest.id}`: it is on this server's map now.",
            embeds=[],
            view=None,
        )

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary)
    async def cancel(self, interaction: discord.Interaction, _: discord.ui.Button) -> None:
        self.stop()
        await interaction.response.edit_message(
            content="Cancelled; nothing changed.", embeds=[], view=None
        )


def _parse_date(text: str) -> date:
    return date.fromisoformat(text.strip())
