"""/admin similar: the pairs of passing solutions of one build task flagged as near-copies
(``bot.similarity.near_copies``), for moderators only; members are never told."""

from __future__ import annotations

import discord
from discord import app_commands

from bot.exts.admin.shared import AdminBase, reply
from bot.exts.common import (
    UserFacingError,
    bot_of,
    guild_id_of,
    task_autocomplete,
    unknown_task_text,
)
from bot.presentation.limits import truncate
from bot.presentation.near_copy_lists import near_copies_text
from bot.similarity.near_copies import near_copies


class SimilarCommands(AdminBase):
    @app_commands.command(
        name="similar", description="Passing solutions of a build task that look copied"
    )
    @app_commands.describe(task="the build task, e.g. go-brrrr/matmul-three-ways")
    @app_commands.autocomplete(task=task_autocomplete({"build"}))
    async def similar(self, interaction: discord.Interaction, task: str) -> None:
        guild_id = guild_id_of(interaction)
        ref = task.strip()
        guild_map = await bot_of(interaction).services.guild_map(guild_id)
        try:
            _, found = guild_map.find_task(ref)
        except KeyError:
            raise UserFacingError(unknown_task_text(ref)) from None
        if found.kind != "build":
            raise UserFacingError(
                f"`{truncate(ref, 100)}` is a {found.kind} task: only build tasks' code is "
                "compared. Pick a build task from the list as you type."
            )
        pairs = await self.bot.services.read(near_copies, guild_id=guild_id, task_ref=ref)
        await reply(interaction, near_copies_text(pairs, found.title))
