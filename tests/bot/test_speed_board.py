"""Speed boards through the real bot and the loopback fake: passing verdicts with a speed trial
go through the bot's own settling, then ``/leaderboard board:speed`` ranks them per device
class by their board ratio, without the hidden member or a result of the previous instrument
(the board says one was retired), and the weekly post names the week's fastest.

No grading workers: each test member's submission stays queued until the test writes its
verdict, as a worker would, and the bot settles it.  The bot's clock is controlled, so every
result is recorded at ``START`` and the week of the post is known.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from PIL import Image

from bot.content import BuildTask
from bot.presentation.speed_board_embeds import (
    PICK_A_TASK,
    fastest_line,
    no_speed_results,
    retired_note,
    speed_board_embed,
    task_label,
)
from bot.progress.periods import week_key
from bot.progress.speed_results import (
    DeviceBoard,
    FastestOfWeek,
    SpeedBoard,
    SpeedEntry,
    is_speed_ranked,
)
from fakediscord import Message, User
from graders.base import SPEED_INSTRUMENT, SpeedResult
from tests.bot.conftest import START, World, start_world
from tests.bot.worker_verdicts import query, submit_and_pass
from tests.presentation.discord_check import assert_sendable, text_of
from tests.support import BUILD_TASK, seed_content

pytestmark = pytest.mark.asyncio(loop_scope="module")

GPU, CPU = "NVIDIA H200", "AMD EPYC 7B13"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("speed"), workers=0, clock=True):
        yield started


async def _reply(world: World, user: User, command: str, /, **options: object) -> Message:
    return await (await world.slash(user, command, **options)).original(timeout=10)


async def _passes(
    world: World,
    user: User,
    ratio: float,
    device: str,
    board_ratio: float | None = None,
    instrument: int = SPEED_INSTRUMENT,
    task: str = BUILD_TASK,
    figures: dict[str, float | int] | None = None,
) -> None:
    """``user`` submits (their first submission); it then passes with a speed trial (with
    ``figures``: placed on a roofline), written as a worker writes a verdict (the bot settles
    it)."""
    trial = SpeedResult(
        ratio=ratio,
        learner_s=0.02 / ratio,
        reference_s=0.02,
        spread=0.05,
        pairs=11,
        device=device,
        instrument=instrument,
        board_ratio=board_ratio,
        **(figures or {}),  # type: ignore[arg-type]
    )
    await submit_and_pass(world, user, finished_at=START, speed=trial, task=task)


async def _until_recorded(world: World, count: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if query(world, "SELECT COUNT(*) FROM speed_results") == [(count,)]:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {count} speed results")


async def test_speed_board_ranks_per_device_and_the_week_names_the_fastest(world: World) -> None:
    ada, bob, cyd, dan, eve = (world.learner() for _ in range(5))
    assert (await _reply(world, dan, "privacy hide")).ephemeral
    # (ratio, board ratio): bob's median is the higher, ada's bound is; the board shows bounds
    trials = (
        (ada, 3.2, 3.1, GPU),
        (bob, 3.5, 1.8, GPU),
        (cyd, 2.6, 2.4, CPU),
        (dan, 9.9, 9.9, GPU),
    )
    for user, ratio, board_ratio, device in trials:
        await _passes(
            world, user, ratio, device, board_ratio, figures=PLACED if user is ada else None
        )
    await _passes(world, eve, 5.0, GPU, instrument=1)  # the previous instrument: retired
    await _until_recorded(world, 5)
    _, task = seed_content().find_task(BUILD_TASK)
    assert isinstance(task, BuildTask)
    paid = query(
        world,
        "SELECT m.user_id, SUM(x.amount) FROM xp_ledger x JOIN members m ON m.id = x.member_id "
        "GROUP BY m.user_id",
    )
    assert dict(paid) == {user.id: task.xp for user in (ada, bob, cyd, dan, eve)}  # a trial pays 0

    # offered: the map's speed-ranked tasks, then tasks with results (this one, ranked or not)
    quests = seed_content().quests
    ranked = [f"{q.id}/{t.id}" for q in quests for t in q.tasks if is_speed_ranked(t)]
    choices = await world.fake.invoke_autocomplete(
        world.guild, world.quests, bob, "leaderboard", focused="task", value="", options={}
    )
    assert sorted(c["value"] for c in choices) == sorted({*ranked, BUILD_TASK})

    board = await _reply(world, bob, "leaderboard", board="speed", task=BUILD_TASK)
    assert not board.ephemeral
    (embed,) = board.embeds
    assert embed["title"] == f"⚡ Speed board · {task_label(task.title, BUILD_TASK)}"
    gpu, cpu = embed["fields"]
    when = f"<t:{int(START.timestamp())}:d>"
    assert gpu["name"] == f"{GPU} · 2 members"
    assert gpu["value"].splitlines() == [
        f"🥇 <@{ada.id}> · **3.1×** · {when}",
        f"🥈 <@{bob.id}> · **1.8×** · {when}",
    ]
    assert cpu["name"] == f"{CPU} · 1 member"
    assert cpu["value"] == f"🥇 <@{cyd.id}> · **2.4×** · {when}"
    assert str(dan.id) not in json.dumps(board.embeds)  # hidden: on no board
    assert str(eve.id) not in json.dumps(board.embeds)  # retired: on no board, but counted
    assert embed["description"].endswith("\n" + retired_note(1))

    pick = await _reply(world, bob, "leaderboard", board="speed")
    assert pick.ephemeral and pick.content == PICK_A_TASK
    quiz = await _reply(world, bob, "leaderboard", board="speed", task="go-brrrr/shape-predictions")
    assert "not speed-ranked" in quiz.content
    ref = next(r for r in ranked if r != BUILD_TASK)  # a speed-ranked task nobody passed
    _, untried = seed_content().find_task(ref)
    empty = await _reply(world, bob, "leaderboard", board="speed", task=ref)
    assert empty.content == no_speed_results(untried.title, ref) and not empty.embeds
    # a result of the previous instrument: still no board, and the answer says why
    await _passes(world, world.learner(), 4.0, GPU, instrument=1, task=ref)
    await _until_recorded(world, 6)
    retired = await _reply(world, bob, "leaderboard", board="speed", task=ref)
    assert retired.content == no_speed_results(untried.title, ref, retired=1)
    assert not retired.embeds

    setup = await world.slash(world.owner, "admin setup", channel=world.quests)
    await setup.original()
    week = week_key(START.date())
    posted = await world.slash(world.owner, "admin post-leaderboard", week=week)
    assert "Posted week" in (await posted.original(timeout=15)).content
    weekly = await world.fake.wait_for_message(
        world.quests,
        lambda m: bool(m.embeds) and m.embeds[0]["title"].startswith("🏆 Week"),
        timeout=10,
    )
    assert (
        f"⚡ Fastest of the week: **{task_label(task.title, BUILD_TASK)}** — <@{ada.id}>, "
        f"3.1× the reference on {GPU}" in weekly.embeds[0]["description"]
    )
    # ada's verdict showed her run on its roofline; the week's post shows it again, drawn
    # from what her row kept: her point where it was in the verdict's picture
    verdict = await world.fake.wait_for_dm(ada, lambda m: m.content.startswith("Passed"), 15)
    assert verdict.embeds[0]["image"]["url"] == "attachment://roofline.png"
    (drawn,) = verdict.attachments
    assert drawn.filename == "roofline.png"
    picture = weekly.embeds[1]
    assert picture["title"] == f"⚡ {task_label(task.title, BUILD_TASK)} on the roofline"
    assert picture["image"]["url"] == "attachment://roofline.png"
    assert [a.filename for a in weekly.attachments] == ["week.png", "roofline.png"]
    again = weekly.attachments[1]
    assert _centre(drawn.data, LEARNER_COLOUR) == _centre(again.data, LEARNER_COLOUR)
    assert _centre(drawn.data, REFERENCE_COLOUR) == _centre(again.data, REFERENCE_COLOUR)
    # bob's trial carried no figures: his verdict has no picture
    plain = await world.fake.wait_for_dm(bob, lambda m: m.content.startswith("Passed"), 15)
    assert plain.attachments == [] and "image" not in plain.embeds[0]


#: ada's trial on the GPU: 8 MB moved, 6 MFLOP, 2.9 TB/s and 2.2 TFLOP/s reached
PLACED = {
    "moved_bytes": 8_392_704,
    "flops": 6_291_456,
    "achieved_gbs": 2900.0,
    "reference_gbs": 900.0,
    "achieved_gflops": 2174.0,
    "reference_gflops": 675.0,
    "peak_gbs": 4800.0,
    "peak_gflops": 67000.0,
}
#: the learner's filled orange marker and the reference's green ring (Okabe-Ito)
LEARNER_COLOUR, REFERENCE_COLOUR = (230, 159, 0), (0, 158, 115)


def _centre(png: bytes, colour: tuple[int, int, int]) -> tuple[int, int]:
    """Where the pixels of exactly ``colour`` sit on a picture, to the pixel."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.size == (800, 500)
    pixels = image.load()
    found = [
        (x, y) for x in range(image.width) for y in range(image.height) if pixels[x, y] == colour
    ]
    assert found, colour
    return (
        round(sum(x for x, _ in found) / len(found)),
        round(sum(y for _, y in found) / len(found)),
    )


async def test_a_moderator_voids_a_result_the_member_is_told_once_and_restore_undoes_it(
    world: World,
) -> None:
    fox = world.learner()
    (recorded,) = query(world, "SELECT COUNT(*) FROM speed_results")[0]
    await _passes(world, fox, 99.0, GPU, 98.0)  # far ahead of everyone on the GPU
    await _until_recorded(world, recorded + 1)
    ((submission_id,),) = query(
        world,
        "SELECT s.id FROM submissions s JOIN members m ON m.id = s.member_id WHERE m.user_id = ?",
        fox.id,
    )
    xp_before = query(world, "SELECT * FROM xp_ledger ORDER BY id")
    board = await _reply(world, fox, "leaderboard", board="speed", task=BUILD_TASK)
    assert f"<@{fox.id}>" in board.embeds[0]["fields"][0]["value"]

    # the moderators' autocomplete lists it (a plain member's lists nothing)
    choices = await world.fake.invoke_autocomplete(
        world.guild, world.quests, world.owner, "admin speed-void", focused="submission", value=""
    )
    assert choices[0]["value"] == submission_id
    assert choices[0]["name"].startswith(f"#{submission_id} · {fox.username} · {BUILD_TASK} · 98×")
    world.fake.set_command_permission(world.guild, "admin", fox, allow=True)
    assert (
        await world.fake.invoke_autocomplete(
            world.guild, world.quests, fox, "admin speed-void", focused="submission", value=""
        )
        == []
    )
    refused = await _reply(
        world, fox, "admin speed-void", submission=submission_id, reason="mine, really"
    )
    assert refused.ephemeral and "Only moderators can use /admin" in refused.content

    done = await _reply(
        world,
        world.owner,
        "admin speed-void",
        submission=submission_id,
        reason="timed a cached result",
    )
    assert done.ephemeral and done.content.startswith(f"Voided submission #{submission_id}")
    assert "They were told by DM" in done.content
    board = await _reply(world, fox, "leaderboard", board="speed", task=BUILD_TASK)
    assert f"<@{fox.id}>" not in json.dumps(board.embeds)
    notice = await world.fake.wait_for_dm(fox, lambda m: "struck your speed result" in m.content)
    assert "Reason: timed a cached result" in notice.content

    again = await _reply(
        world, world.owner, "admin speed-void", submission=submission_id, reason="twice"
    )
    assert "already void" in again.content
    restored = await _reply(world, world.owner, "admin speed-restore", submission=submission_id)
    assert restored.content.startswith(f"Restored submission #{submission_id}")
    board = await _reply(world, fox, "leaderboard", board="speed", task=BUILD_TASK)
    assert f"🥇 <@{fox.id}> · **98×**" in board.embeds[0]["fields"][0]["value"]
    not_void = await _reply(world, world.owner, "admin speed-restore", submission=submission_id)
    assert not_void.content == (
        f"Submission #{submission_id}'s speed result is not void: there is nothing to restore."
    )
    unknown = await _reply(world, world.owner, "admin speed-void", submission=999_999, reason="x")
    assert unknown.content.startswith("There is no submission #999999")
    told = [m for m in world.fake.dms_to(fox) if "struck your speed result" in m.content]
    assert len(told) == 1  # once, for the one void
    assert query(world, "SELECT * FROM xp_ledger ORDER BY id") == xp_before
    actions = [a for (a,) in query(world, "SELECT action FROM audit_log")]
    assert actions.count("speed.void") == 1 and actions.count("speed.restore") == 1


async def test_a_huge_board_still_fits_discord() -> None:
    """40 device classes with long, hostile names, 10 members each: whole lines, at most 25
    fields, 6000 characters, the rest counted in the footer; nothing pings."""
    entries = tuple(
        SpeedEntry(rank, rank, 10**18 + rank, "x", 12345.678, 13000.0, 1e-6, 1.0, START)
        for rank in range(1, 11)
    )
    devices = tuple(
        DeviceBoard(f"@everyone GPU {n} " + "X" * 120, 1000, entries) for n in range(40)
    )
    embed = speed_board_embed(SpeedBoard(1, BUILD_TASK, devices), title="@here " + "t" * 300)
    assert_sendable(embeds=[embed])
    fields = embed.to_dict()["fields"]
    assert 1 <= len(fields) <= 25
    assert all(f["value"].count("\n") == 9 for f in fields)  # every line whole
    assert embed.footer.text == f"40 device classes · {40 - len(fields)} more not shown"
    text = text_of([embed])
    assert "@everyone" not in text and "@here" not in text
    assert "**12346×**" in text  # two significant figures, never an exponent


async def test_messages_without_a_board() -> None:
    assert no_speed_results("Fast *softmax*", "q/softmax") == (
        "Nobody has a speed result for **Fast \\*softmax\\*** yet: pass it with "
        "`/submit task:q/softmax` to get one."
    )
    fastest = FastestOfWeek(
        "2026-W48", "q/softmax", 3, 1, 42, "ada", 0.87, 0.93, "AMD EPYC 7B13", START
    )
    assert fastest_line(fastest, title=None) == (  # the board ratio, not the median
        "⚡ Fastest of the week: **q/softmax** — <@42>, 0.87× the reference on AMD EPYC 7B13"
    )
    assert no_speed_results("Fast *softmax*", "q/softmax", retired=2) == (
        "Nobody has a ranked speed result for **Fast \\*softmax\\*** yet: pass it with "
        "`/submit task:q/softmax` to get one.\n2 members' older results were measured by the "
        "previous instrument and no longer rank: resubmit to rank."
    )
    assert retired_note(1).startswith("1 member's older results were measured")


async def test_a_board_shows_the_board_ratio_and_the_retired_line_only_when_some_are() -> None:
    entry = SpeedEntry(1, 1, 42, "ada", 1.7, 2.6, 0.01, 0.026, START)  # ranked 1.7, median 2.6
    board = SpeedBoard(1, BUILD_TASK, (DeviceBoard(GPU, 1, (entry,)),))
    embed = speed_board_embed(board, title=None).to_dict()
    assert embed["fields"][0]["value"] == f"🥇 <@42> · **1.7×** · <t:{int(START.timestamp())}:d>"
    assert "instrument" not in embed["description"]
    retired = SpeedBoard(1, BUILD_TASK, board.devices, retired=3)
    description = speed_board_embed(retired, title=None).to_dict()["description"]
    assert description.endswith(
        "\n3 members' older results were measured by the previous "
        "instrument and no longer rank: resubmit to rank."
    )
