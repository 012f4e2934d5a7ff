"""A moderator's changes to the server's map: add or replace a quest, disable one, date one.

Each change and its audit row are written in the caller's transaction.  The server's row is
created if this is the first thing a moderator does (before ``/admin setup``), since every
map row belongs to a server.
"""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from bot import audit
from bot.content import Quest, version_hash
from bot.curriculum import drafts
from bot.db.dialect import upsert
from bot.db.models import Guild, GuildQuest, QuestSchedule


async def publish_draft(
    session: AsyncSession,
    *,
    guild_id: int,
    quest: Quest,
    draft_id: int,
    actor_user_id: int,
    now: datetime,
) -> None:
    """Publish a previewed quest and forget its draft in one transaction, so the moderator is
    told the truth whatever fails: both happened, or neither."""
    await publish_quest(
        session, guild_id=guild_id, quest=quest, actor_user_id=actor_user_id, now=now
    )
    await drafts.delete_draft(session, draft_id)


async def publish_quest(
    session: AsyncSession, *, guild_id: int, quest: Quest, actor_user_id: int, now: datetime
) -> None:
    """Put ``quest`` on the server's map, replacing a quest of the same id."""
    await _ensure_guild(session, guild_id)
    statement = upsert(session, GuildQuest).values(
        guild_id=guild_id,
        quest_id=quest.id,
        origin="added",
        content=quest.model_dump(mode="json", exclude_defaults=True),
        version_hash=version_hash(quest),
        enabled=True,
        added_by_user_id=actor_user_id,
        created_at=now,
        updated_at=now,
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[GuildQuest.guild_id, GuildQuest.quest_id],
            set_={
                "origin": "added",
                "content": statement.excluded.content,
                "version_hash": statement.excluded.version_hash,
                "enabled": True,
                "updated_at": statement.excluded.updated_at,
            },
        )
    )
    audit.add(
        session,
        guild_id=guild_id,
        actor_user_id=actor_user_id,
        action="quest-add",
        target=f"quest:{quest.id}",
        details={"version": version_hash(quest)},
    )


async def disable_quest(
    session: AsyncSession, *, guild_id: int, quest: Quest, actor_user_id: int, now: datetime
) -> None:
    """Take ``quest`` off the server's map (its row stays, disabled, so it can come back)."""
    await _ensure_guild(session, guild_id)
    statement = upsert(session, GuildQuest).values(
        guild_id=guild_id,
        quest_id=quest.id,
        origin="map",
        content=quest.model_dump(mode="json", exclude_defaults=True),
        version_hash=version_hash(quest),
        enabled=False,
        created_at=now,
        updated_at=now,
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[GuildQuest.guild_id, GuildQuest.quest_id],
            set_={"enabled": False, "updated_at": statement.excluded.updated_at},
        )
    )
    audit.add(
        session,
        guild_id=guild_id,
        actor_user_id=actor_user_id,
        action="quest-disable",
        target=f"quest:{quest.id}",
    )


async def schedule_quest(
    session: AsyncSession,
    *,
    guild_id: int,
    quest_id: str,
    day: date,
    actor_user_id: int,
    now: datetime,
) -> None:
    """Make ``quest_id`` the quest of the local ``day``, replacing another dated there."""
    await _ensure_guild(session, guild_id)
    statement = upsert(session, QuestSchedule).values(
        guild_id=guild_id,
        on_date=day,
        quest_id=quest_id,
        created_by_user_id=actor_user_id,
        created_at=now,
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[QuestSchedule.guild_id, QuestSchedule.on_date],
            set_={"quest_id": quest_id, "created_by_user_id": actor_user_id},
        )
    )
    audit.add(
        session,
        guild_id=guild_id,
        actor_user_id=actor_user_id,
        action="schedule",
        target=f"quest:{quest_id}",
        details={"date": day.isoformat()},
    )


async def _ensure_guild(session: AsyncSession, guild_id: int) -> None:
    await session.execute(upsert(session, Guild).values(id=guild_id).on_conflict_do_nothing())
