"""The /admin group: one cog, its commands in one module per area.

Registered with ``default_member_permissions`` = Manage Server, and checked again here on every
call (discord.py does not, and server admins can override command permissions): Manage Server or
the configured moderator role.

Every /admin answer is ephemeral, and the check acknowledges the interaction (deferred, "thinking")
before its first database read: a database that is slow to answer (SQLite's write lock held by
another process makes a write wait up to its busy timeout) must not outlast Discord's 3 s, or the
moderator would see "This interaction failed" instead of what happened.  The commands then answer
with ``shared.reply``.
"""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot import guilds
from bot.app import BrrrBot
from bot.exts.admin.content import ContentCommands, DraftButton
from bot.exts.admin.export import ExportCommands
from bot.exts.admin.grading import GradingCommands
from bot.exts.admin.post_now import PostCommands
from bot.exts.admin.roles import RoleCommands
from bot.exts.admin.setup import SetupCommands
from bot.exts.admin.similar import SimilarCommands
from bot.exts.admin.speed import SpeedVoidCommands
from bot.exts.admin.tokens import TokenCommands
from bot.exts.admin.xp import XpCommands
from bot.exts.common import guild_id_of


@app_commands.default_permissions(manage_guild=True)
@app_commands.guild_only()
class Admin(
    SetupCommands,
    PostCommands,
    ContentCommands,
    XpCommands,
    RoleCommands,
    GradingCommands,
    SpeedVoidCommands,
    ExportCommands,
    SimilarCommands,
    TokenCommands,
    commands.GroupCog,
    group_name="admin",
    group_description="Moderator commands",
):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        super().__init__()

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        await interaction.response.defer(ephemeral=True, thinking=True)
        guild_id = guild_id_of(interaction)
        member = interaction.user
        manage = isinstance(member, discord.Member) and member.guild_permissions.manage_guild
        roles = [role.id for role in getattr(member, "roles", [])]
        try:
            guild = await self.bot.services.guild(guild_id)
        except Exception as exc:
            # discord.py hands only AppCommandErrors from a check to the tree's error handler;
            # anything else (the database away) it logs, and the moderator would be left waiting
            assert interaction.command is not None
            raise app_commands.CommandInvokeError(interaction.command, exc) from exc
        if guilds.is_moderator(manage_guild=manage, role_ids=roles, guild=guild):
            return True
        raise app_commands.CheckFailure(
            "Only moderators can use /admin: you need Manage Server or the moderator role."
        )


async def setup(bot: BrrrBot) -> None:
    # quest previews' buttons answer from the database, whichever process sent them
    bot.add_dynamic_items(DraftButton)
    await bot.add_cog(Admin(bot))


async def teardown(bot: BrrrBot) -> None:
    bot.remove_dynamic_items(DraftButton)
