"""Only the moderator who uploaded a quest can publish or cancel its preview.

Discord shows the preview to that moderator alone (it is ephemeral), so the fake's client
cannot click it as anyone else; this drives the cog's click handling in process instead,
as a forged or replayed click would reach it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from bot.curriculum import drafts
from bot.db.engine import make_sessionmaker
from bot.exts.admin.content import EXPIRED, NOT_YOURS, ContentCommands

GUILD, UPLOADER, OTHER = 5, 6, 7


class Click:
    """A click the button already acknowledged (a deferred update): the cog answers it by
    editing the preview or with an ephemeral follow-up."""

    def __init__(self, user_id: int) -> None:
        self.guild_id = GUILD
        self.user = SimpleNamespace(id=user_id)
        self.sent: list[tuple[str, bool]] = []
        self.edits: list[dict[str, Any]] = []
        self.followup = SimpleNamespace(send=self._send)

    async def _send(self, content: str, *, ephemeral: bool = False) -> None:
        self.sent.append((content, ephemeral))

    async def edit_original_response(self, **fields: Any) -> None:
        self.edits.append(fields)


def _click(user_id: int) -> Any:
    return Click(user_id)


async def test_someone_else_is_refused_and_the_draft_stays(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)

    async def write(use_case: Any, /, *args: Any, **kwargs: Any) -> Any:
        async with sessions() as session, session.begin():
            return await use_case(session, *args, **kwargs)

    cog = ContentCommands()
    cog.bot = SimpleNamespace(services=SimpleNamespace(write=write))  # type: ignore[assignment]
    draft = await write(
        drafts.save_draft,
        guild_id=GUILD,
        moderator_user_id=UPLOADER,
        filename="q.yaml",
        text="id: q\n",
        now=datetime.now(UTC),
    )
    for handle in (cog.publish_draft, cog.cancel_draft):
        click = _click(OTHER)
        await handle(click, draft.key)
        assert click.sent == [(NOT_YOURS, True)] and not click.edits
    mine = _click(UPLOADER)
    await cog.cancel_draft(mine, draft.key)
    assert mine.edits == [{"content": "Cancelled; nothing changed.", "embeds": [], "view": None}]
    again = _click(UPLOADER)
    await cog.publish_draft(again, draft.key)  # gone now: answered as expired, buttons removed
    assert again.edits == [{"content": EXPIRED, "embeds": [], "view": None}]
