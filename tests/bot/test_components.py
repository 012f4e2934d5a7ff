"""Buttons after a restart, expired previews, foreign buttons, and command sync only on change.

One clock-controlled bot for the module: restarts and the clock are the tests' to move.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import datetime, timedelta

import pytest
import pytest_asyncio

from bot.exts.admin.content import EXPIRED
from bot.exts.stale_components import STALE
from fakediscord import Message
from tests.bot.conftest import World, start_world
from tests.bot.test_admin import ADDED_QUEST, _custom_id
from tests.bot.test_learner_commands import _text

pytestmark = pytest.mark.asyncio(loop_scope="module")

SYNC = "PUT /applications/{application_id}/commands"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("components"), workers=0, clock=True):
        yield started


def _now(world: World) -> datetime:
    return datetime.fromisoformat(world.clock_file.read_text())


def _custom_ids(message: Message) -> list[str]:
    return [c["custom_id"] for row in message.components for c in row["components"]]


async def _board(world: World, members: int) -> Message:
    """``members`` learners with distinct XP, then the all-time board a new learner asks for."""
    for amount in range(1, members + 1):
        grant = await world.slash(
            world.owner, "admin xp", member=world.learner(), amount=100 + amount, reason="seed"
        )
        await grant.original()
    board = await world.slash(world.learner(), "leaderboard", period="all")
    return await board.wait_for(lambda m: bool(m.components), timeout=10)


async def _preview(world: World, text: str) -> Message:
    handle = await world.slash(world.owner, "admin quest-add", file=("added.yaml", text.encode()))
    return await handle.wait_for(lambda m: bool(m.components), timeout=10)


async def test_buttons_work_after_a_restart_that_does_not_sync_commands(world: World) -> None:
    first = await _board(world, 12)
    assert all(custom_id.startswith("brrr:lb:") for custom_id in _custom_ids(first))
    assert "Page 1/2" in first.embeds[0]["footer"]["text"]
    quest = ADDED_QUEST.replace("id: matmul-again", "id: after-restart", 1)
    preview = await _preview(world, quest)
    assert len(world.fake.calls(SYNC)) == 1  # the first start synced

    await world.restart()

    assert len(world.fake.calls(SYNC)) == 1  # the same tree: no bulk overwrite
    assert "commands unchanged: not synced" in world.bot.output
    clicker = world.learner()
    grant = await world.slash(world.owner, "admin xp", member=clicker, amount=1, reason="seed")
    await grant.original()
    click = await world.fake.click_button(first, _custom_id(first, "Next ▶"), user=clicker)
    # acknowledged at once (a deferred update), then the page is edited in
    second = await click.wait_for(lambda m: "Page 2/" in m.embeds[0]["footer"]["text"])
    assert "Page 2/2" in second.embeds[0]["footer"]["text"]
    assert "`#11`" in second.embeds[0]["description"]
    # the own-place line is the clicker's, not that of whoever ran /leaderboard
    assert f"{clicker.username}, you are #13 with 1 XP." in second.embeds[0]["description"]
    labels = {c["label"]: c.get("disabled", False) for c in second.components[0]["components"]}
    assert labels == {"◀ Previous": False, "Next ▶": True}

    publish = await world.fake.click_button(preview, _custom_id(preview, "Publish"))
    published = await publish.wait_for(lambda m: not m.components)
    assert "Published `after-restart`" in published.content
    shown = await world.slash(world.learner(), "quest", quest="after-restart")
    assert "Matmul, once more" in _text(await shown.original())
    assert _drafts(world) == []


async def test_an_expired_preview_says_so_and_loses_its_buttons(world: World) -> None:
    quest = ADDED_QUEST.replace("id: matmul-again", "id: too-late", 1)
    preview = await _preview(world, quest)
    assert len(_drafts(world)) == 1
    world.set_time(_now(world) + timedelta(minutes=15, seconds=1))
    click = await world.fake.click_button(preview, _custom_id(preview, "Publish"))
    answer = await click.wait_for(lambda m: not m.components)
    assert answer.content == EXPIRED and answer.ephemeral
    assert "(15 minutes)" in answer.content and not answer.components
    assert _drafts(world) == []  # deleted on the click
    shown = await world.slash(world.learner(), "quest", quest="too-late")
    assert "There is no quest" in (await shown.original()).content


async def test_an_expired_draft_is_swept_when_the_next_is_saved(world: World) -> None:
    await _preview(world, ADDED_QUEST.replace("id: matmul-again", "id: left-open", 1))
    world.set_time(_now(world) + timedelta(minutes=16))
    await _preview(world, ADDED_QUEST.replace("id: matmul-again", "id: next-one", 1))
    expires = (_now(world) + timedelta(minutes=15)).replace(tzinfo=None)
    assert _drafts(world) == [("added.yaml", expires)]  # only the new one is left


async def test_a_button_from_before_the_upgrade_gets_a_clear_answer(world: World) -> None:
    board = await world.slash(world.learner(), "leaderboard", period="all")
    message = await board.wait_for(lambda m: bool(m.components), timeout=10)
    # As a message sent by the previous version: discord.py's random hex ids, no live view.
    for number, component in enumerate(message.components[0]["components"]):
        component["custom_id"] = f"{number:x}" * 32
    click = await world.fake.click_button(message, "1" * 32)
    answer = await click.followup(lambda m: m.content == STALE)
    assert answer.ephemeral
    assert (await click.original()).components == []  # the stale buttons are gone
    assert not click.rejections


async def test_a_button_of_a_view_the_bot_holds_is_left_to_that_view(world: World) -> None:
    handle = await world.slash(world.learner(), "answer", task="go-brrrr/name-the-bottleneck")
    first = await handle.modal()
    ids = [row["components"][0]["custom_id"] for row in first["components"]]
    saved = await world.fake.submit_modal(handle, dict.fromkeys(ids, "overhead"))
    prompt = await saved.original()
    (custom_id,) = _custom_ids(prompt)
    assert not custom_id.startswith("brrr:")  # an in-memory view's random id
    click = await world.fake.click_button(prompt, custom_id)
    second = await click.modal()
    assert "(2/2)" in second["title"]
    ids = [row["components"][0]["custom_id"] for row in second["components"]]
    done = await world.fake.submit_modal(click, dict.fromkeys(ids, "compute"))
    assert "Name the bottleneck" in _text(await done.original(timeout=10))
    # By the verdict, a stale answer to the click would have been sent and refused long since.
    assert not click.rejections and not click.followups


async def test_a_changed_command_tree_is_synced_at_the_next_start(world: World) -> None:
    before = len(world.fake.calls(SYNC))
    with closing(sqlite3.connect(world.database)) as db, db:  # as if another tree was synced
        db.execute("UPDATE bot_state SET value = 'an older tree' WHERE key = 'commands.digest'")
    await world.restart()
    assert len(world.fake.calls(SYNC)) == before + 1
    with closing(sqlite3.connect(world.database)) as db:
        (digest,) = db.execute(
            "SELECT value FROM bot_state WHERE key = 'commands.digest'"
        ).fetchone()
    assert digest != "an older tree" and len(digest) == 64  # the new tree's, once it synced


def _drafts(world: World) -> list[tuple[str, datetime]]:
    """The stored drafts: (filename, naive UTC expiry), oldest first."""
    with closing(sqlite3.connect(world.database)) as db:
        rows = db.execute("SELECT filename, expires_at FROM quest_drafts ORDER BY id").fetchall()
    return [(filename, datetime.fromisoformat(expires)) for filename, expires in rows]
