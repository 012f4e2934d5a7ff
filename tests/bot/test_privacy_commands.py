"""/privacy through the real bot and the loopback fake: hide, export, delete and its confirmation.

No grading workers: a submission stays queued, with its code in the submission and in its job.
The bot's clock is controlled, so a confirmation can be made to expire.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from fakediscord import Message, User
from tests.bot.conftest import CORRECT, START, World, start_world

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("privacy"), workers=0, clock=True):
        yield started


def _text(message: Message) -> str:
    return "\n".join([message.content, *(e.get("description", "") for e in message.embeds)])


async def _reply(world: World, user: User, command: str, /, **options: object) -> Message:
    return await (await world.slash(user, command, **options)).original(timeout=10)


async def _grant(world: World, user: User, amount: int) -> None:
    await _reply(world, world.owner, "admin xp", member=user, amount=amount, reason="seed")


def _button(message: Message, label: str) -> str:
    for row in message.components:
        for component in row["components"]:
            if component.get("label") == label:
                return component["custom_id"]
    raise AssertionError(f"no {label!r} button on {message.content!r}")


def _stored(world: World) -> bytes:
    """The database file and its write-ahead log, as they are on disk."""
    wal = Path(f"{world.database}-wal")
    return world.database.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def _members_named(world: World, user: User) -> int:
    with closing(sqlite3.connect(world.database)) as db:
        return db.execute("SELECT COUNT(*) FROM members WHERE user_id = ?", (user.id,)).fetchone()[
            0
        ]


async def test_a_hidden_member_leaves_the_board_and_sees_their_rank(world: World) -> None:
    ada, bob, cyd = world.learner(), world.learner(), world.learner()
    for user, amount in ((ada, 9000), (bob, 8000), (cyd, 7000)):  # the module's top three
        await _grant(world, user, amount)
    before = _text(await _reply(world, cyd, "leaderboard", period="all"))
    assert ada.username in before and "you are #3" in before
    hidden = await _reply(world, ada, "privacy hide")
    assert hidden.ephemeral and "hidden" in hidden.content
    board = _text(await _reply(world, cyd, "leaderboard", period="all"))
    assert ada.username not in board
    assert f"🥇 **{bob.username}**" in board and "you are #2" in board  # ranks closed up
    own = _text(await _reply(world, ada, "leaderboard", period="all"))
    assert "hidden from the boards" in own and "9,000" not in own
    card = await (await world.slash(ada, "profile")).wait_for(lambda m: bool(m.attachments), 15)
    assert "rank #1 (hidden from the boards" in card.content
    assert (await _reply(world, ada, "privacy show")).ephemeral
    assert "you are #3" in _text(await _reply(world, cyd, "leaderboard", period="all"))


async def test_export_is_one_json_file_with_the_code(world: World) -> None:
    learner = world.learner()
    code = CORRECT + b"\n# export-marker-51c2\n"
    await (await world.submit(learner, code)).original(timeout=15)
    reply = await _reply(world, learner, "privacy export")
    assert reply.ephemeral
    (attachment,) = reply.attachments
    assert attachment.filename.endswith(".json")
    data = json.loads(attachment.data)
    assert data["member"]["user_id"] == learner.id
    assert [s["code"] for s in data["submissions"]] == [code.decode()]


async def test_delete_after_confirmation_leaves_no_code_and_no_board_entry(world: World) -> None:
    learner, other = world.learner(), world.learner()
    marker = b"delete-marker-9e41d7"
    await (await world.submit(learner, CORRECT + b"\n# " + marker + b"\n")).original(timeout=15)
    await _grant(world, learner, 500)
    assert marker in _stored(world)
    assert learner.username in _text(await _reply(world, other, "leaderboard", period="all"))

    confirm = await _reply(world, learner, "privacy delete")
    assert confirm.ephemeral and "Nobody can undo this" in confirm.content
    assert "submission" in confirm.content and "/privacy export" in confirm.content
    click = await world.fake.click_button(confirm, _button(confirm, "Delete my data"))
    done = await click.wait_for(lambda m: m.content.startswith("Done."), timeout=15)
    assert "1 submission" in done.content and not done.components
    assert marker not in _stored(world)
    assert _members_named(world, learner) == 0
    board = _text(await _reply(world, other, "leaderboard", period="all"))
    assert learner.username not in board


async def test_every_click_on_a_confirmation_is_answered(world: World) -> None:
    """Cancel; a click after a restart; a click once the data is gone; a click too late."""
    learner = world.learner()
    await _reply(world, learner, "done", task="go-brrrr/matrix-drill")
    cancel, after_restart, after_delete, late = [
        await _reply(world, learner, "privacy delete") for _ in range(4)
    ]
    click = await world.fake.click_button(cancel, _button(cancel, "Cancel"))
    cancelled = await click.original()
    assert cancelled.content == "Cancelled: nothing was deleted." and not cancelled.components
    assert _members_named(world, learner) == 1

    await world.restart()  # the buttons answer by custom id: no view object survives
    click = await world.fake.click_button(after_restart, _button(after_restart, "Delete my data"))
    done = await click.wait_for(lambda m: m.content.startswith("Done."), timeout=15)
    assert "Your XP history (1 ledger row)" in done.content
    assert _members_named(world, learner) == 0

    click = await world.fake.click_button(after_delete, _button(after_delete, "Delete my data"))
    again = await click.wait_for(lambda m: not m.components, timeout=15)
    assert again.content == "Nothing of yours is left to delete in this server."

    await world.at(START + timedelta(minutes=11))  # past the 10 minutes a confirmation lasts
    click = await world.fake.click_button(late, _button(late, "Delete my data"))
    expired = await click.original()
    assert expired.ephemeral and expired.content.startswith("This confirmation expired")
    assert not expired.components
