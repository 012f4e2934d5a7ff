"""A moderator's post went out, then the database went away before its audit entry was
written: the answer says the post stands and was not recorded, not that nothing happened.

The window between Discord accepting the post and the audit write is too short to hit from
outside, so this drives the /admin cog's step in process, with a session factory that
fails the way SQLAlchemy does when SQLite's lock outlasts the busy timeout.
"""

from __future__ import annotations

import sqlite3
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from bot.exts.admin.shared import AdminBase

DONE = "Posted: https://discord.com/channels/1/2/3"


class Interaction:
    guild_id = 1
    user = SimpleNamespace(id=7)

    def __init__(self) -> None:
        self.edits: list[str] = []

    async def edit_original_response(self, *, content: str, **_: Any) -> None:
        self.edits.append(content)


def _admin(error: Exception) -> AdminBase:
    def sessions() -> Any:
        raise error

    admin = AdminBase()
    admin.bot = SimpleNamespace(services=SimpleNamespace(sessions=sessions))  # type: ignore[assignment]
    return admin


async def test_a_post_whose_audit_entry_meets_an_outage_is_said_to_stand_unrecorded() -> None:
    locked = OperationalError("BEGIN IMMEDIATE", {}, sqlite3.OperationalError("database is locked"))
    interaction = Interaction()
    await _admin(locked)._done_and_audited(interaction, DONE, "post-quest", "message:3")  # type: ignore[arg-type]
    assert interaction.edits == [
        DONE + " The audit log could not record it: the bot's database is unavailable right now."
    ]


async def test_any_other_audit_failure_is_not_passed_off_as_an_outage() -> None:
    interaction = Interaction()
    with pytest.raises(RuntimeError, match="a bug"):
        await _admin(RuntimeError("a bug"))._done_and_audited(  # type: ignore[arg-type]
            interaction, DONE, "post-quest", "message:3"
        )
    assert interaction.edits == []
