"""A moderator's map edits, on a server that has never run /admin setup."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.content import load_content
from bot.curriculum.guild_map import load_guild_map
from bot.curriculum.map_edits import disable_quest, publish_quest, schedule_quest
from bot.db.engine import make_sessionmaker
from bot.db.models import AuditEntry, Guild
from tests.support import SEED_QUESTS

GUILD = 77
MODERATOR = 5


async def test_edits_on_a_server_without_setup_create_its_row_and_are_audited(
    engine: AsyncEngine,
) -> None:
    content = load_content(SEED_QUESTS)
    quest = content.quest("go-brrrr").model_copy(update={"id": "go-brrrr-again"})
    now = datetime.now(UTC)
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        await publish_quest(session, guild_id=GUILD, quest=quest, actor_user_id=MODERATOR, now=now)
    async with sessions() as session, session.begin():
        await schedule_quest(
            session,
            guild_id=GUILD,
            quest_id=quest.id,
            day=(now + timedelta(days=3)).date(),
            actor_user_id=MODERATOR,
            now=now,
        )
        await disable_quest(
            session,
            guild_id=GUILD,
            quest=content.quest("tensor-puzzles"),
            actor_user_id=MODERATOR,
            now=now,
        )
    async with sessions() as session:
        assert await session.get(Guild, GUILD) is not None
        guild_map = await load_guild_map(session, content, GUILD)
        actions = (
            (await session.execute(select(AuditEntry.action).order_by(AuditEntry.id)))
            .scalars()
            .all()
        )
    ids = [q.id for q in guild_map.quests]
    assert "go-brrrr-again" in ids and "tensor-puzzles" not in ids
    assert guild_map.overrides == {(now + timedelta(days=3)).date(): "go-brrrr-again"}
    assert actions == ["quest-add", "schedule", "quest-disable"]
