"""A button or select whose handler fails still answers the click (discord.py would only log
it, and the member would see "This interaction failed")."""

from __future__ import annotations

import logging
from typing import Any

import pytest

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
