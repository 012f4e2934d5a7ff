"""/token new and /token revoke: a member's personal API token for ``brrrbot submit``.

The token is shown once, in an ephemeral reply; the bot keeps only its hash
(``bot.rest_api.tokens``).
"""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot import clock
from bot.app import BrrrBot
from bot.exts.common import display_name, guild_id_of
from bot.rest_api import tokens


def usage_text(token: str) -> str:
    """The reply to /token new: the token, once, and how to use it."""
    return (
        "Your personal API token for this server (shown once; it replaces any older one):\n"
        f"```\n{token}\n```\n"
        "Submit from a terminal with it:\n"
        "```\nexport BRRRBOT_URL=<this bot's address, ask a moderator>\n"
        f"export BRRRBOT_TOKEN={token}\n"
        "brrrbot submit solution.py --task QUEST/TASK\n```\n"
        "Anyone with the token can submit as you: keep it secret, and `/token revoke` it if "
        "it leaks."
    )


@app_commands.guild_only()
class Tokens(commands.GroupCog, group_name="token", group_description="Your personal API token"):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(name="new", description="Get a personal API token for brrrbot submit")
    async def new(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)  # before the write
        token = await self.bot.services.write(
            tokens.issue,
            guild_id_of(interaction),
            interaction.user.id,
            display_name(interaction.user),
            clock.now(),
        )
        await interaction.edit_original_response(content=usage_text(token))

    @app_commands.command(name="revoke", description="Revoke your personal API token")
    async def revoke(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        revoked = await self.bot.services.write(
            tokens.revoke, guild_id_of(interaction), interaction.user.id, clock.now()
        )
        text = (
            "Your API token is revoked: it no longer works. `/token new` gives you another."
            if revoked
            else "You have no live API token here; `/token new` gives you one."
        )
        await interaction.edit_original_response(content=text)


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Tokens(bot))
