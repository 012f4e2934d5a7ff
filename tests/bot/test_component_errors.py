"""A button or select whose handler fails still answers the click (discord.py would only log
it, and the member would see "This interaction failed")."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from bot.exts.common import UserFacingError
from bot.exts.error_replies import AnswersErrors


class _Response:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bool]] = []

    def is_done(self) -> bool:
        return bool(self.sent)

    async def send_message(self, content: str, *, ephemeral: bool = False) -> None:
        self.sent.append((content, ephemeral))


class _Interaction:
    def __init__(self) -> None:
        self.response = _Response()
        self.user = "learner#1"
        self.guild_id = 7


class _Failing(AnswersErrors):
    def __init__(self, error: Exception) -> None:
        self.error = error

    async def clicked(self, interaction: Any) -> None:
        raise self.error


async def test_an_unexpected_error_is_logged_and_answered_with_a_reference(
    caplog: pytest.LogCaptureFixture,
) -> None:
    interaction = _Interaction()
    with caplog.at_level(logging.ERROR, logger="bot.exts.error_replies"):
        await _Failing(RuntimeError("boom")).callback(interaction)  # type: ignore[arg-type]
    ((content, ephemeral),) = interaction.response.sent
    assert ephemeral and content.startswith("Something went wrong (ref ")
    ref = content.split("(ref ")[1].split(")")[0]
    assert f"component _Failing failed (ref {ref})" in caplog.text and "boom" in caplog.text
    assert (caplog.records[-1].ref, caplog.records[-1].guild_id) == (ref, 7)


async def test_a_user_facing_error_is_shown_as_it_is() -> None:
    interaction = _Interaction()
    await _Failing(UserFacingError("That page is gone.")).callback(interaction)  # type: ignore[arg-type]
    assert interaction.response.sent == [("That page is gone.", True)]


async def test_a_database_outage_is_answered_in_clear_words_without_a_traceback(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """The write lock held by another connection past the (here zero) busy timeout: the member
    is told the database is away and nothing was saved, never "Something went wrong"."""
    path = tmp_path / "held.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN IMMEDIATE")
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}", connect_args={"timeout": 0})

    class _Writes(AnswersErrors):
        async def clicked(self, interaction: Any) -> None:
            async with engine.begin() as connection:
                await connection.execute(text("INSERT INTO t VALUES (1)"))

    interaction = _Interaction()
    try:
        with caplog.at_level(logging.DEBUG, logger="bot.exts.error_replies"):
            await _Writes().callback(interaction)  # type: ignore[arg-type]
    finally:
        await engine.dispose()
        holder.close()
    assert interaction.response.sent == [
        (
            "The bot's database is unavailable right now; nothing was saved. "
            "Try again in a minute.",
            True,
        )
    ]
    assert [(r.levelno, r.exc_info) for r in caplog.records] == [(logging.WARNING, None)]
    assert "database unavailable" in caplog.text and "locked" in caplog.text
