"""Browsing the map: /today, /quest, /quests, /readings, /library."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot import clock
from bot.app import BrrrBot
from bot.content import Quest, TaskRef
from bot.curriculum.guild_map import GuildMap, today_quest
from bot.exts.common import UserFacingError, find_quest, guild_id_of, quest_autocomplete
from bot.presentation.limits import batch_embeds
from bot.presentation.quest_embeds import map_embeds, quest_embeds
from bot.presentation.readings import library_embeds, readings_embeds
from bot.presentation.search import search_library
from bot.progress.ledger import task_earned
from bot.progress.members import find_member_id

LibraryKind = Literal[
    "book", "course", "post", "podcast", "video", "reference", "repo", "exercises"
]


async def send_embeds(
    interaction: discord.Interaction, embeds: Sequence[discord.Embed], *, ephemeral: bool
) -> None:
    """Reply with as many messages as the embeds need (each within Discord's limits)."""
    batches = batch_embeds(embeds)
    if not interaction.response.is_done():
        await interaction.response.send_message(embeds=batches.pop(0), ephemeral=ephemeral)
    for batch in batches:  # after a defer, the first follow-up fills the deferred reply
        await interaction.followup.send(embeds=batch, ephemeral=ephemeral)


class Quests(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot

    async def _earned(self, guild_id: int, user_id: int, quest: Quest) -> dict[str, int]:
        async with self.bot.services.reads() as session:
            member_id = await find_member_id(session, guild_id, user_id)
            if member_id is None:
                return {}
            refs = [str(TaskRef(quest.id, task.id)) for task in quest.tasks]
            return {ref: await task_earned(session, member_id, ref) for ref in refs}

    async def _show_quest(
        self, interaction: discord.Interaction, guild_map: GuildMap, quest: Quest, heading: str
    ) -> None:
        guild_id = guild_id_of(interaction)
        earned = await self._earned(guild_id, interaction.user.id, quest)
        embeds = quest_embeds(
            quest,
            phase_title=guild_map.phase_titles.get(quest.phase, quest.phase),
            library=self.bot.services.content.library,
            earned=earned,
            heading=heading,
        )
        await send_embeds(interaction, embeds, ephemeral=False)

    async def _today(self, guild_id: int) -> tuple[GuildMap, Quest]:
        guild_map = await self.bot.services.guild_map(guild_id)
        guild = await self.bot.services.guild(guild_id)
        quest = today_quest(guild_map, guild, clock.now())
        if quest is None:
            raise UserFacingError("This server's map has no quests enabled.")
        return guild_map, quest

    @app_commands.command(
        name="today", description="Today's quest: readings, tasks and your progress"
    )
    @app_commands.guild_only()
    async def today(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)  # acknowledge before database work
        guild_map, quest = await self._today(guild_id_of(interaction))
        await self._show_quest(interaction, guild_map, quest, "Today's quest")

    @app_commands.command(name="quest", description="Any quest of the map")
    @app_commands.describe(quest="the quest to show")
    @app_commands.autocomplete(quest=quest_autocomplete)
    @app_commands.guild_only()
    async def quest(self, interaction: discord.Interaction, quest: str) -> None:
        guild_map = await self.bot.services.guild_map(guild_id_of(interaction))
        found = find_quest(guild_map, quest)
        await self._show_quest(interaction, guild_map, found, "Quest")

    @app_commands.command(name="quests", description="The learning map, phase by phase")
    @app_commands.guild_only()
    async def quests(self, interaction: discord.Interaction) -> None:
        guild_id = guild_id_of(interaction)
        await interaction.response.defer(thinking=True)
        guild_map, today = await self._today(guild_id)
        completed: set[str] = set()
        for quest in guild_map.quests:
            earned = await self._earned(guild_id, interaction.user.id, quest)
            if earned and all(earned.values()):
                completed.add(quest.id)
        await send_embeds(
            interaction, map_embeds(guild_map.phases(), completed, today.id), ephemeral=False
        )

    @app_commands.command(name="readings", description="Readings of today's (or a) quest")
    @app_commands.describe(quest="a quest (default: today's)")
    @app_commands.autocomplete(quest=quest_autocomplete)
    @app_commands.guild_only()
    async def readings(self, interaction: discord.Interaction, quest: str | None = None) -> None:
        guild_map, found = await self._today(guild_id_of(interaction))
        if quest:
            found = find_quest(guild_map, quest)
        embeds = readings_embeds(found, self.bot.services.content.library)
        await send_embeds(interaction, embeds, ephemeral=False)

    @app_commands.command(name="library", description="Search the reading library")
    @app_commands.describe(query="words in the title, author or tags", kind="only this kind")
    @app_commands.guild_only()
    async def library(
        self,
        interaction: discord.Interaction,
        query: str | None = None,
        kind: LibraryKind | None = None,
    ) -> None:
        content = self.bot.services.content
        entries = search_library(content.library, query, kind)
        embeds = library_embeds(entries, cited_by=content.cited_by, query=query, kind=kind)
        await send_embeds(interaction, embeds, ephemeral=True)


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Quests(bot))
