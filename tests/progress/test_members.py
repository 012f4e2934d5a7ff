"""Members and guild rows appear on first sight and keep their current name."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.db.models import Guild, Member
from bot.progress.members import ensure_member


async def test_ensure_member_creates_the_guild_and_refreshes_the_name(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions() as session, session.begin():
        first = await ensure_member(session, 500, 42, "ada")
    async with sessions() as session, session.begin():
        again = await ensure_member(session, 500, 42, "Ada Lovelace" + "!" * 200)
        other_guild = await ensure_member(session, 501, 42, "ada")
    assert again.id == first.id and other_guild.id != first.id
    assert again.display_name == ("Ada Lovelace" + "!" * 200)[:100]
    async with sessions() as session:
        guild = await session.get(Guild, 500)
        names = (await session.execute(select(Member.display_name))).scalars().all()
    assert guild is not None and (guild.timezone, guild.post_time) == ("UTC", "09:00")
    assert sorted(names) == sorted([again.display_name, "ada"])
