"""/solutions and /privacy share through the real bot and the loopback fake: readable only after
a pass, one attachment per sharing member, told before the first read of a speed-ranked task
that reading is not racing, paged with buttons that work after a restart, and a member who
stops sharing is gone at once.

No grading workers: each submission stays queued until the test writes its verdict, as a
worker would, and the bot settles it.  The bot's clock is controlled, so "after reading" is
decided by moving it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import pytest_asyncio

from fakediscord import Message, User
from graders.base import SPEED_INSTRUMENT, SpeedResult
from tests.bot.conftest import START, World, start_world
from tests.bot.worker_verdicts import query, submit_and_pass

pytestmark = pytest.mark.asyncio(loop_scope="module")

SPEED_TASK = "transformer-internals/stable-softmax"  # speed-ranked on the seed map
PLAIN_TASK = "go-brrrr/matmul-three-ways"  # a build task without a speed trial
GPU = "NVIDIA H200"
SENTENCE = "Memory-bound: 83% of the H200's datasheet 4,800 GB/s."


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("solutions"), workers=0, clock=True):
        yield started


async def _reply(world: World, user: User, command: str, /, **options: object) -> Message:
    return await (await world.slash(user, command, **options)).original(timeout=10)


def _buttons(message: Message) -> dict[str, str]:
    return {c["label"]: c["custom_id"] for row in message.components for c in row["components"]}


async def _passes(
    world: World, user: User, task: str, code: bytes, ratio: float | None = None
) -> int:
    """``user`` submits ``code`` for ``task`` and it passes (with a speed trial of ``ratio``),
    written as a worker writes a verdict; once the bot settled it, its id."""
    speed = None
    if ratio is not None:
        speed = SpeedResult(
            ratio=ratio,
            learner_s=0.02 / ratio,
            reference_s=0.02,
            spread=0.05,
            pairs=11,
            device=GPU,
            instrument=SPEED_INSTRUMENT,
            board_ratio=ratio,
            bound_sentence=SENTENCE,
        )
    submission_id = await submit_and_pass(
        world, user, finished_at=START, speed=speed, task=task, code=code
    )
    deadline = time.monotonic() + 15
    while query(world, "SELECT settled_at FROM submissions WHERE id = ?", submission_id) == [
        (None,)
    ]:
        assert time.monotonic() < deadline, "the bot never settled the verdict"
        await asyncio.sleep(0.05)
    return submission_id


def _code(tag: str) -> bytes:
    return f"import torch\n\ndef softmax(x):  # {tag}\n    return torch.softmax(x, -1)\n".encode()


async def test_every_wrong_ask_gets_one_clear_sentence(world: World) -> None:
    asker = world.learner()
    unknown = await _reply(world, asker, "solutions", task="go-brrrr/no-such-task")
    assert unknown.ephemeral and "There is no task `go-brrrr/no-such-task`" in unknown.content
    quiz = await _reply(world, asker, "solutions", task="go-brrrr/shape-predictions")
    assert "is a quiz task: only build tasks have solutions to read" in quiz.content
    not_passed = await _reply(world, asker, "solutions", task=PLAIN_TASK)
    assert not_passed.ephemeral
    assert not_passed.content.startswith("Pass **") and f"/submit task:{PLAIN_TASK}" in (
        not_passed.content
    )
    await _passes(world, asker, PLAIN_TASK, b"def matmul(a, b):\n    return a @ b  # asker\n")
    alone = await _reply(world, asker, "solutions", task=PLAIN_TASK)
    assert alone.content.startswith("Nobody who passed") and not alone.attachments
    assert query(world, "SELECT COUNT(*) FROM solution_reads") == [(0,)]


async def test_reading_a_speed_tasks_solutions_is_told_first_and_marks_later_runs(
    world: World,
) -> None:
    ada, bob, cyd, rea = (world.learner() for _ in range(4))
    codes = {user.id: _code(f"marker-{user.id}") for user in (ada, bob, cyd, rea)}
    for user, ratio in ((ada, 1.4), (bob, 2.2), (cyd, 3.0), (rea, 1.0)):
        await _passes(world, user, SPEED_TASK, codes[user.id], ratio)
    for user in (ada, bob):
        shared = await _reply(world, user, "privacy share", state="on")
        assert shared.ephemeral and shared.content.startswith("You now share")
    ledger = query(world, "SELECT * FROM xp_ledger ORDER BY id")

    notice = await _reply(world, rea, "solutions", task=SPEED_TASK)
    assert notice.ephemeral and not notice.attachments
    assert "Reading is not racing" in notice.content and "2 members" in notice.content
    assert query(world, "SELECT COUNT(*) FROM solution_reads") == [(0,)]  # not opened yet

    click = await world.fake.click_button(notice, _buttons(notice)["Show the solutions"])
    page = await click.wait_for(lambda m: bool(m.attachments), timeout=15)
    assert page.ephemeral and not page.components  # one page: no buttons
    assert [a.data for a in page.attachments] == [codes[bob.id], codes[ada.id]]  # fastest first
    assert [a.filename for a in page.attachments] == [
        "1-transformer-internals-stable-softmax.py",
        "2-transformer-internals-stable-softmax.py",
    ]
    lines = page.content.splitlines()
    assert (
        lines[1].startswith(f"1. <@{bob.id}>")
        and "**2.2×** the reference on NVIDIA H200" in (lines[1])
    )
    assert lines[2].strip() == SENTENCE
    assert lines[3].startswith(f"2. <@{ada.id}>")
    assert str(cyd.id) not in page.content  # passed, does not share
    assert str(rea.id) not in page.content.split("\n", 1)[1]  # never their own
    assert query(world, "SELECT COUNT(*) FROM solution_reads") == [(1,)]
    assert query(world, "SELECT * FROM xp_ledger ORDER BY id") == ledger  # XP untouched

    # rea's faster run after reading ranks below cyd's and bob's, and is marked
    await world.at(START + timedelta(hours=1))
    await _passes(world, rea, SPEED_TASK, _code("after reading"), 9.0)
    board = await _reply(world, rea, "leaderboard", board="speed", task=SPEED_TASK)
    field = board.embeds[0]["fields"][0]["value"].splitlines()
    assert [line.split(" · ")[0:2] for line in field] == [
        ["🥇 " + f"<@{cyd.id}>", "**3.0×**"],
        ["🥈 " + f"<@{bob.id}>", "**2.2×**"],
        ["🥉 " + f"<@{ada.id}>", "**1.4×**"],
        ["`#4` " + f"<@{rea.id}>", "**1.0×**"],  # their best made before reading
    ]
    assert "📖" not in board.embeds[0]["fields"][0]["value"]
    assert query(
        world,
        "SELECT r.board_ratio, r.after_reading FROM speed_results r "
        "JOIN members m ON m.id = r.member_id WHERE m.user_id = ? ORDER BY r.id",
        rea.id,
    ) == [(1.0, 0), (9.0, 1)]

    # dan reads before his only ranked run: on the board, last, marked, and the board says why
    dan = world.learner()
    await _passes(world, dan, SPEED_TASK, _code("dan first"))  # passed, no trial
    opened_notice = await _reply(world, dan, "solutions", task=SPEED_TASK)
    click = await world.fake.click_button(
        opened_notice, _buttons(opened_notice)["Show the solutions"]
    )
    await click.wait_for(lambda m: bool(m.attachments), timeout=15)
    await _passes(world, dan, SPEED_TASK, _code("dan after"), 5.0)
    board = await _reply(world, rea, "leaderboard", board="speed", task=SPEED_TASK)
    embed = board.embeds[0]
    last = embed["fields"][0]["value"].splitlines()[-1]
    assert last.startswith(f"`#5` <@{dan.id}> · **5.0×**") and last.endswith(" · 📖")
    assert "📖 submitted after reading the shared solutions" in embed["description"]

    # ada stops sharing: gone from the very next read, which needs no notice any more
    assert (await _reply(world, ada, "privacy share", state="off")).content.startswith(
        "Your solutions are no longer shared"
    )
    again = await (await world.slash(rea, "solutions", task=SPEED_TASK)).wait_for(
        lambda m: bool(m.attachments), timeout=15
    )
    assert [a.data for a in again.attachments] == [codes[bob.id]]
    assert "You first opened these <t:" in again.content
    exported = json.loads((await _reply(world, bob, "privacy export")).attachments[0].data)
    assert exported["sharing"]["shares_solutions"] is True
    assert [s["task_ref"] for s in exported["sharing"]["readable"]] == [SPEED_TASK]


async def test_pages_of_five_with_buttons_that_work_after_a_restart(world: World) -> None:
    reader = world.learner()
    await _passes(world, reader, PLAIN_TASK, b"def matmul(a, b):\n    return a @ b  # reader\n")
    sharers = [world.learner() for _ in range(6)]
    for user in sharers:
        await _passes(world, user, PLAIN_TASK, f"def matmul(a, b):  # {user.id}\n".encode())
        await _reply(world, user, "privacy share", state="on")
    hidden = sharers[0]
    assert (await _reply(world, hidden, "privacy hide")).ephemeral

    first = await (await world.slash(reader, "solutions", task=PLAIN_TASK)).wait_for(
        lambda m: bool(m.attachments), timeout=15
    )
    newest_first = [f"def matmul(a, b):  # {u.id}\n".encode() for u in reversed(sharers[1:])]
    assert "page 1 of 1" in first.content  # five listed sharers: the hidden one is not
    assert [a.data for a in first.attachments] == newest_first
    assert str(hidden.id) not in first.content

    assert (await _reply(world, hidden, "privacy show")).ephemeral
    extra = world.learner()
    await _passes(world, extra, PLAIN_TASK, f"def matmul(a, b):  # {extra.id}\n".encode())
    await _reply(world, extra, "privacy share", state="on")
    page_one = await (await world.slash(reader, "solutions", task=PLAIN_TASK)).wait_for(
        lambda m: bool(m.attachments), timeout=15
    )
    assert "page 1 of 2" in page_one.content and len(page_one.attachments) == 5
    assert list(_buttons(page_one)) == ["Next ▶"]

    await world.restart()  # the buttons answer by custom id
    click = await world.fake.click_button(page_one, _buttons(page_one)["Next ▶"])
    page_two = await click.wait_for(lambda m: "page 2 of 2" in m.content, timeout=15)
    assert [a.data for a in page_two.attachments] == [  # shown again: page 2 of 2 (7)
        f"def matmul(a, b):  # {u.id}\n".encode() for u in (sharers[1], sharers[0])
    ]
    assert list(_buttons(page_two)) == ["◀ Previous"]
