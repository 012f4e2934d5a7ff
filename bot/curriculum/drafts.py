"""Quests uploaded with ``/admin quest-add`` and awaiting Publish, kept in the database.

The preview's buttons carry only the draft's ``key``, so Publish still works after a restart;
the YAML itself waits here until it is published, cancelled, or ``LIFETIME`` runs out.  Expired
drafts are deleted when someone clicks one and whenever a new draft is saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.dialect import upsert
from bot.db.models import Guild, QuestDraft

#: how long a preview's buttons stay usable
LIFETIME = timedelta(minutes=15)
FILENAME_CHARS = 255  # the column's size; the name only labels problems found in the file


@dataclass(frozen=True)
class Draft:
    id: int
    guild_id: int
    moderator_user_id: int
    filename: str
    text: str
    expires_at: datetime

    @property
    def key(self) -> str:
        """What the preview's buttons carry: the id and the expiry's second.  SQLite gives a
        deleted row's id to the next row, so the id alone could open a later draft."""
        return f"{self.id}-{_second(self.expires_at)}"


async def save_draft(
    session: AsyncSession,
    *,
    guild_id: int,
    moderator_user_id: int,
    filename: str,
    text: str,
    now: datetime,
) -> Draft:
    """Store an uploaded quest until ``now + LIFETIME``; expired drafts are swept first.

    The server's row is created if a moderator uploads before ``/admin setup``: every draft
    belongs to a server.
    """
    await sweep_expired(session, now=now)
    await session.execute(upsert(session, Guild).values(id=guild_id).on_conflict_do_nothing())
    row = QuestDraft(
        guild_id=guild_id,
        moderator_user_id=moderator_user_id,
        filename=filename[:FILENAME_CHARS],
        text=text,
        expires_at=now + LIFETIME,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    return _draft(row)


async def open_draft(session: AsyncSession, key: str, *, now: datetime) -> Draft | None:
    """The draft of ``key`` while it exists and has not expired; an expired one is deleted, and
    None is returned for it as for one already published, cancelled or swept."""
    draft_id, _, second = key.partition("-")
    if not (draft_id.isdigit() and second.isdigit()):
        return None
    row = await session.get(QuestDraft, int(draft_id))
    if row is None or _second(row.expires_at) != int(second):
        return None
    if row.expires_at <= now:
        await session.delete(row)
        return None
    return _draft(row)


async def delete_draft(session: AsyncSession, draft_id: int) -> None:
    """Forget a published or cancelled draft (nothing happens if it is gone already)."""
    await session.execute(delete(QuestDraft).where(QuestDraft.id == draft_id))


async def sweep_expired(session: AsyncSession, *, now: datetime) -> int:
    """Delete every expired draft, in all servers; how many there were."""
    result = await session.execute(delete(QuestDraft).where(QuestDraft.expires_at <= now))
    return result.rowcount or 0


def _second(moment: datetime) -> int:
    return int(moment.timestamp())


def _draft(row: QuestDraft) -> Draft:
    return Draft(
        id=row.id,
        guild_id=row.guild_id,
        moderator_user_id=row.moderator_user_id,
        filename=row.filename,
        text=row.text,
        expires_at=row.expires_at,
    )
