"""The discussion thread a daily post opens when a server turns threads on.

Plain module (no discord): the thread's name and opener, and its record in the post log.
The scheduler opens the thread after the post's last part is sent and before the post is
marked posted, so a retry after a crash tries again (Discord answers 160004, "already
exists", which counts as done) and a posted day never opens a second one.  Verdicts never
go to the thread: it is for talk, and grading stays private (``bot.delivery.outcomes``).
"""

from __future__ import annotations

from datetime import date

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.models import PostLog

NAME_LIMIT = 100  # Discord's limit for a thread name
OPENER = "Discuss today's quest here; verdicts stay private: submit with /submit."


def thread_name(day: date, quest_title: str) -> str:
    """``Day 2026-12-03 · The roofline``: the server's local date and the quest, one line."""
    name = f"Day {day.isoformat()} · {' '.join(quest_title.split())}"
    return name if len(name) <= NAME_LIMIT else name[: NAME_LIMIT - 1].rstrip() + "…"


async def record_thread(session: AsyncSession, post_id: int, thread_id: int) -> None:
    """Note the thread in the daily post's log row (its ``details``)."""
    await session.execute(
        update(PostLog).where(PostLog.id == post_id).values(details={"thread_id": thread_id})
    )
