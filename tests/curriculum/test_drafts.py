"""Quest drafts: kept until published, cancelled or expired; expired ones never come back."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.curriculum.drafts import (
    LIFETIME,
    delete_draft,
    open_draft,
    save_draft,
    sweep_expired,
)
from bot.db.engine import make_sessionmaker
from bot.db.models import Guild, QuestDraft
from tests import timeline

GUILD = 91
MODERATOR = 7
NOW = timeline.monday_after(timeline.now()) + timedelta(hours=9)


async def test_a_draft_opens_until_it_expires_then_is_deleted(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        saved = await save_draft(
            session,
            guild_id=GUILD,
            moderator_user_id=MODERATOR,
            filename="q.yaml",
            text="id: q\n",
            now=NOW,
        )
        assert await session.get(Guild, GUILD) is not None  # created: before /admin setup
    assert saved.expires_at == NOW + LIFETIME == NOW + timedelta(minutes=15)
    last_moment = saved.expires_at - timedelta(microseconds=1)
    async with sessions() as session, session.begin():
        assert await open_draft(session, saved.key, now=last_moment) == saved
    async with sessions() as session, session.begin():
        assert await open_draft(session, saved.key, now=saved.expires_at) is None
    async with sessions() as session, session.begin():
        assert await session.get(QuestDraft, saved.id) is None  # deleted by that click
        assert await open_draft(session, saved.key, now=NOW) is None  # even if the clock is back


async def test_saving_sweeps_expired_drafts_of_every_server(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        old = [
            await save_draft(
                session,
                guild_id=guild_id,
                moderator_user_id=MODERATOR,
                filename="q.yaml",
                text="",
                now=NOW,
            )
            for guild_id in (GUILD, GUILD + 1)
        ]
    later = NOW + LIFETIME
    async with sessions() as session, session.begin():
        new = await save_draft(
            session,
            guild_id=GUILD,
            moderator_user_id=MODERATOR,
            filename="r.yaml",
            text="",
            now=later,
        )
    async with sessions() as session, session.begin():
        assert await session.scalar(select(func.count()).select_from(QuestDraft)) == 1
        assert await sweep_expired(session, now=later) == 0
        # An old preview's button never opens the new draft, even where SQLite reused its id.
        assert [await open_draft(session, draft.key, now=later) for draft in old] == [None, None]
        assert await open_draft(session, new.key, now=later) == new


async def test_a_key_that_is_not_a_drafts_opens_nothing(engine: AsyncEngine) -> None:
    async with make_sessionmaker(engine)() as session:
        for key in ("", "1", "x-1", "1-x", "-", "99-1772442000"):
            assert await open_draft(session, key, now=NOW) is None


async def test_delete_forgets_a_draft_and_tolerates_a_second_delete(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        draft = await save_draft(
            session,
            guild_id=GUILD,
            moderator_user_id=MODERATOR,
            filename="q.yaml",
            text="",
            now=NOW,
        )
    for _ in range(2):
        async with sessions() as session, session.begin():
            await delete_draft(session, draft.id)
    async with sessions() as session:
        assert await session.scalar(select(func.count()).select_from(QuestDraft)) == 0
