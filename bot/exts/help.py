"""/help: today's quest and how to do its tasks, then every command the caller may use.

The command list is read from the live command tree at each call, so a new command (or a
new subcommand of a group) is listed without editing this module.  Commands registered with
default member permissions (``/admin``) are moderators' and shown only to moderators, by the
same rule ``/admin`` itself applies: Manage Server or the server's moderator role.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot import clock, guilds
from bot.app import BrrrBot
from bot.curriculum.guild_map import today_quest
from bot.db.models import Guild
from bot.exts.common import guild_id_of
from bot.exts.quests import send_embeds
from bot.presentation.help_text import CommandHelp, Today, help_embeds

#: the extension whose message command submits a solution (named in the build tasks' hint)
SUBMIT_MENU_MODULE = "bot.exts.message_submit"

SlashCommand = app_commands.Command[Any, ..., Any]
AnyCommand = SlashCommand | app_commands.Group | app_commands.ContextMenu


class Help(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot

    @app_commands.command(name="help", description="Today's quest and every command, briefly")
    @app_commands.guild_only()
    async def show_help(self, interaction: discord.Interaction) -> None:
        guild_id = guild_id_of(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        guild = await self.bot.services.guild(guild_id)
        configured = guild is not None and guild.quest_channel_id is not None
        quest = None
        if configured:
            guild_map = await self.bot.services.guild_map(guild_id)
            quest = today_quest(guild_map, guild, clock.now())
        tree = self.bot.tree.get_commands()
        everyone, moderators = split_commands(tree)
        embeds = help_embeds(
            Today(configured=configured, quest=quest),
            everyone,
            moderators if _is_moderator(interaction.user, guild) else None,
            submit_menu=submit_menu(tree),
        )
        await send_embeds(interaction, embeds, ephemeral=True)


def _is_moderator(user: discord.User | discord.Member, guild: Guild | None) -> bool:
    manage = isinstance(user, discord.Member) and user.guild_permissions.manage_guild
    roles = [role.id for role in getattr(user, "roles", [])]
    return guilds.is_moderator(manage_guild=manage, role_ids=roles, guild=guild)


def split_commands(tree: Iterable[AnyCommand]) -> tuple[list[CommandHelp], list[CommandHelp]]:
    """Every command and subcommand as one line each: (everyone's, moderators'), in tree order.

    A command is moderators' when Discord shows it only to members with some permission.
    """
    everyone: list[CommandHelp] = []
    moderators: list[CommandHelp] = []
    for command in tree:
        lines = moderators if command.default_permissions is not None else everyone
        if isinstance(command, app_commands.ContextMenu):
            menu = "message" if command.type is discord.AppCommandType.message else "user"
            lines.append(CommandHelp(command.name, menu=menu))
        elif isinstance(command, app_commands.Group):
            lines += [
                _slash(sub)
                for sub in command.walk_commands()
                if isinstance(sub, app_commands.Command)
            ]
        else:
            lines.append(_slash(command))
    return everyone, moderators


def submit_menu(tree: Iterable[AnyCommand]) -> str | None:
    """The name of the message command that submits a solution, if the bot has one."""
    for command in tree:
        if (
            isinstance(command, app_commands.ContextMenu)
            and command.type is discord.AppCommandType.message
            and command.module == SUBMIT_MENU_MODULE
        ):
            return command.name
    return None


def _slash(command: SlashCommand) -> CommandHelp:
    options = tuple(
        parameter.display_name if parameter.required else f"[{parameter.display_name}]"
        for parameter in command.parameters
    )
    return CommandHelp(command.qualified_name, command.description, options)


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Help(bot))
