"""/admin export: the leaderboard and the XP ledger as CSV files (text cells made inert for
spreadsheets by ``bot.presentation.spreadsheets``)."""

from __future__ import annotations

import io

import discord
from discord import app_commands

from bot.exts.admin.shared import AdminBase
from bot.exts.common import guild_id_of
from bot.presentation.spreadsheets import csv_bytes
from bot.progress.export import GuildExport, guild_export


def export_files(data: GuildExport) -> list[discord.File]:
    board = csv_bytes(
        ["rank", "user_id", "display_name", "xp"],
        [[e.rank, e.user_id, e.display_name, e.xp] for e in data.board],
    )
    ledger = csv_bytes(
        ["id", "created_at", "user_id", "display_name", "amount", "source", "reason", "reference"],
        [
            [
                x.id,
                x.created_at.isoformat(),
                x.user_id,
                x.display_name,
                x.amount,
                x.source,
                x.reason,
                x.reference,
            ]
            for x in data.ledger
        ],
    )
    return [
        discord.File(io.BytesIO(board), filename="leaderboard.csv"),
        discord.File(io.BytesIO(ledger), filename="xp_ledger.csv"),
    ]


class ExportCommands(AdminBase):
    @app_commands.command(name="export", description="The leaderboard and the XP ledger as CSV")
    async def export(self, interaction: discord.Interaction) -> None:
        data = await self.bot.services.read(guild_export, guild_id_of(interaction))
        await interaction.edit_original_response(
            content=(
                f"Leaderboard ({len(data.board)} members) and XP ledger ({len(data.ledger)} rows)."
            ),
            attachments=export_files(data),
        )
