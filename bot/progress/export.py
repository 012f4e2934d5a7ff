"""The server's data as ``/admin export`` hands it to moderators: board and ledger, one snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from bot.progress.leaderboard import Entry, standings
from bot.progress.ledger import LedgerLine, guild_ledger
from bot.progress.totals import ALL_TIME_KEY

EVERYONE = 1_000_000_000


@dataclass(frozen=True)
class GuildExport:
    board: list[Entry]
    ledger: list[LedgerLine]


async def guild_export(session: AsyncSession, guild_id: int) -> GuildExport:
    """The all-time board and every ledger row, read in one snapshot so they agree."""
    board = await standings(session, guild_id, "all", ALL_TIME_KEY, limit=EVERYONE)
    return GuildExport(board=list(board), ledger=await guild_ledger(session, guild_id))
