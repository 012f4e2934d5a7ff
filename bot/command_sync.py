"""Whether the application commands need syncing: a digest of what a sync would send.

A bulk overwrite at every start rewrites every command on Discord (and counts against the
daily creation limit when names change), so the bot keeps the digest of the payload it last
synced in ``bot_state`` and syncs only when the digest differs.  The application id is part
of the digest: the same database under another application must sync.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.dialect import upsert
from bot.db.models import BotState

KEY = "commands.digest"


def commands_digest(payload: Sequence[dict[str, Any]], application_id: int) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no spaces) of the payload and the app id.

    Command order stays as given: it is the order the payload is sent in.
    """
    canonical = json.dumps(
        {"application_id": application_id, "commands": list(payload)},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


async def synced_digest(session: AsyncSession) -> str | None:
    """The digest of the last successful sync, or None before the first."""
    row = await session.get(BotState, KEY)
    return row.value if row is not None else None


async def remember_synced(session: AsyncSession, digest: str, *, now: datetime) -> None:
    """Record ``digest`` as synced; call only after Discord accepted the sync."""
    statement = upsert(session, BotState).values(key=KEY, value=digest, updated_at=now)
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[BotState.key], set_={"value": digest, "updated_at": now}
        )
    )
