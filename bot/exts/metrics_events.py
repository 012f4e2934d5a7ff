"""Counts every interaction Discord sends, by kind and command, for ``/metrics``.

Counted on arrival (``on_interaction``), so a command whose handler fails or never answers
is counted too.  The command label is the name the bot's own tree resolves (``admin
quest-add``), never free text from the payload, so the label set stays as small as the tree.
"""

from __future__ import annotations

from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.metrics import METRICS

KINDS = {
    discord.InteractionType.application_command: "command",
    discord.InteractionType.autocomplete: "autocomplete",
    discord.InteractionType.component: "component",
    discord.InteractionType.modal_submit: "modal",
}


class MetricsEvents(commands.Cog):
    @commands.Cog.listener()
    async def on_interaction(self, interaction: discord.Interaction) -> None:
        kind = KINDS.get(interaction.type, "other")
        METRICS.interaction(kind, command_label(kind, interaction.command))


def command_label(
    kind: str,
    command: app_commands.Command[Any, ..., Any] | app_commands.ContextMenu | None,
) -> str:
    """The command's full name; "" for components and modals; "unknown" for a command the
    tree does not know (one removed since the client last synced)."""
    if kind not in ("command", "autocomplete"):
        return ""
    return command.qualified_name if command is not None else "unknown"


async def setup(bot: commands.Bot) -> None:
    await bot.add_cog(MetricsEvents())
