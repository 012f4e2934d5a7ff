"""Learner commands through the real bot, the loopback fake and a real worker."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from fakediscord import User
from tests.bot.conftest import World
from tests.support import BUILD_TASK, SOLUTIONS

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _text(message) -> str:
    """Everything a member reads in a message: content and embed text."""
    parts = [message.content]
    for embed in message.embeds:
        parts += [embed.get("title", ""), embed.get("description", "")]
        parts += [f"{f['name']} {f['value']}" for f in embed.get("fields", [])]
        parts.append(embed.get("author", {}).get("name", ""))
    return "\n".join(parts)


def _ledger(world: World, user: User) -> list[tuple[str, int]]:
    """What the bot stored in the XP ledger for ``user``: (source, amount), oldest first."""
    with closing(sqlite3.connect(world.database)) as db:
        return db.execute(
            "SELECT xp_ledger.source, xp_ledger.amount FROM xp_ledger "
            "JOIN members ON members.id = xp_ledger.member_id WHERE members.user_id = ? "
            "ORDER BY xp_ledger.id",
            (user.id,),
        ).fetchall()


def _statuses(world: World, user: User) -> list[str]:
    """The stored status of each of ``user``'s submissions, oldest first."""
    with closing(sqlite3.connect(world.database)) as db:
        rows = db.execute(
            "SELECT submissions.status FROM submissions "
            "JOIN members ON members.id = submissions.member_id WHERE members.user_id = ? "
            "ORDER BY submissions.id",
            (user.id,),
        ).fetchall()
    return [status for (status,) in rows]


def _number(pattern: str, text: str) -> int:
    """The one number ``pattern`` captures in ``text`` (commas allowed); fails if absent."""
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not found in {text!r}"
    return int(match[1].replace(",", ""))


async def test_commands_are_registered(world: World) -> None:
    names = {command.name for command in world.fake.commands()}
    assert names >= {
        "today",
        "quest",
        "quests",
        "readings",
        "library",
        "submit",
        "answer",
        "done",
        "submissions",
        "profile",
        "leaderboard",
        "admin",
    }
    (admin,) = [c for c in world.fake.commands() if c.name == "admin"]
    assert admin.default_member_permissions == str(1 << 5)  # Manage Server


async def test_today_shows_the_quest_with_readings_and_tasks(world: World) -> None:
    handle = await world.slash(world.learner(), "today")
    assert await handle.acked() < 3
    reply = await handle.original()
    await handle.followup(lambda m: "/submit" in _text(m))  # a long quest takes two messages
    text = "\n".join(_text(m) for m in [reply, *handle.followups])
    assert "Go Brrrr" in text and "Today's quest" in text
    assert "Making Deep Learning Go Brrrr" in text
    assert "/submit" in text and "/answer" in text and "/done" in text


async def test_submit_autocomplete_offers_build_tasks_only(world: World) -> None:
    choices = await world.fake.invoke_autocomplete(
        world.guild, world.quests, world.learner(), "submit", focused="task", value="go"
    )
    assert [c["value"] for c in choices] == [BUILD_TASK]


async def test_submit_passes_awards_xp_and_levels_up(world: World) -> None:
    learner = world.learner()
    handle = await world.submit(learner)
    assert await handle.acked() < 3
    verdict = await handle.wait_for(lambda m: m.content.startswith("Passed"), timeout=60)
    assert verdict.ephemeral
    assert "+60 XP" in verdict.content
    assert "Level up! You reached level 2." in verdict.content
    assert "matmul_loops" in _text(verdict)
    assert _statuses(world, learner) == ["passed"]
    assert _ledger(world, learner) == [("task", 60)]  # the XP the message announced is stored


async def test_submit_failing_solution_gets_feedback_and_no_xp(world: World) -> None:
    learner = world.learner()
    done = await world.slash(learner, "done", task="go-brrrr/matrix-drill")
    await done.original()
    before = _ledger(world, learner)
    assert before == [("self", 10)]  # XP from before, so "no XP" is not an empty ledger by default
    handle = await world.submit(learner, (SOLUTIONS / "wrong_values.py").read_bytes())
    verdict = await handle.wait_for(lambda m: m.content.startswith("Failed"), timeout=60)
    assert "max abs error" in _text(verdict)
    assert "XP" not in verdict.content, verdict.content
    assert _statuses(world, learner) == ["failed"]  # graded and stored, and paid nothing
    assert _ledger(world, learner) == before


CDN_DOWNLOAD = "GET /cdn/attachments/{channel_id}/{attachment_id}/{filename}"


@pytest.mark.parametrize(
    ("filename", "data", "words", "downloaded"),
    [
        ("notes.txt", b"print(1)", "not a .py or .ipynb", False),
        ("empty.py", b"", "empty", True),
        ("blob.py", b"\x00\x01\x02\x03" * 10, "binary", True),
        ("big.py", b"#" * (300 * 1024), "limit", False),
    ],
)
async def test_submit_rejects_bad_files_with_a_reason(
    world: World, filename: str, data: bytes, words: str, downloaded: bool
) -> None:
    learner = world.learner()
    before = len(world.fake.calls(CDN_DOWNLOAD))
    handle = await world.submit(learner, data, filename=filename)
    reply = await handle.original(timeout=10)
    assert words in reply.content, reply.content
    # what intake refuses by its name or size alone is never downloaded
    fetched = [c.params["filename"] for c in world.fake.calls(CDN_DOWNLOAD)[before:]]
    assert fetched == ([filename] if downloaded else []), fetched
    with sqlite3.connect(world.database) as db:
        queued = db.execute(
            "SELECT COUNT(*) FROM submissions JOIN members ON members.id = submissions.member_id "
            "WHERE members.user_id = ?",
            (learner.id,),
        ).fetchone()[0]
    assert queued == 0  # nothing was queued for a rejected file


async def test_submit_unknown_task_typed_by_hand(world: World) -> None:
    before = len(world.fake.calls(CDN_DOWNLOAD))
    handle = await world.submit(world.learner(), b"x = 1\n", filename="s.py", task="go-brrrr/nope")
    reply = await handle.original(timeout=10)
    assert "There is no task `go-brrrr/nope`" in reply.content
    assert world.fake.calls(CDN_DOWNLOAD)[before:] == []  # told before the file is fetched


async def test_answer_quiz_in_a_modal_marks_each_answer(world: World) -> None:
    learner = world.learner()
    handle = await world.slash(learner, "answer", task="go-brrrr/shape-predictions")
    modal = await handle.modal()
    ids = [row["components"][0]["custom_id"] for row in modal["components"]]
    typed = "(4, 64, 64) typed-answer-7c1f"  # wrong, and found nowhere else
    submitted = await world.fake.submit_modal(
        handle, dict(zip(ids, ["4x128x128", "(4, 128, 128)", typed], strict=True))
    )
    reply = await submitted.original()
    assert reply.content.startswith("Passed")  # 2 of 3 passes with partial credit
    assert "+20 XP" in reply.content
    text = _text(reply)
    assert text.count("✓") == 2 and text.count("✗") == 1
    assert _ledger(world, learner) == [("quiz", 20)]  # round(30 XP x 2/3)
    # only the result is kept, never what the member typed: not in the database file, not in
    # its write-ahead log (the reply above was sent after the award's commit)
    wal = Path(f"{world.database}-wal")
    stored = world.database.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    kept = b"typed-answer-7c1f" in stored
    assert not kept, "the typed answer is in the database"


async def test_done_awards_once(world: World) -> None:
    learner = world.learner()
    first = await world.slash(learner, "done", task="go-brrrr/zero-to-hero")
    assert "+20 XP" in (await first.original()).content
    again = await world.slash(learner, "done", task="go-brrrr/zero-to-hero")
    assert "already" in (await again.original()).content
    assert _ledger(world, learner) == [("self", 20)]  # one row: the second /done stored nothing


async def test_profile_and_leaderboard(world: World) -> None:
    learner = world.learner()
    done = await world.slash(learner, "done", task="go-brrrr/matrix-drill")
    await done.original()
    profile = await world.slash(learner, "profile")
    card = await profile.wait_for(lambda m: bool(m.attachments), timeout=15)
    assert card.attachments[0].data.startswith(b"\x89PNG")
    assert _ledger(world, learner) == [("self", 10)]
    assert _number(r"· level (\d+)\n", card.content) == 1
    assert _number(r"([\d,]+) XP in total", card.content) == 10
    board = await world.slash(learner, "leaderboard", period="all")
    text = _text(await board.original())
    mine = rf"{re.escape(learner.username)}, you are #\d+ with ([\d,]+) XP\."
    assert _number(mine, text) == 10


async def test_map_readings_and_library(world: World) -> None:
    learner = world.learner()
    quests = await world.slash(learner, "quests")
    text = _text(await quests.original(timeout=10))
    assert "Foundations" in text and "Go Brrrr" in text
    readings = await world.slash(learner, "readings")
    text = _text(await readings.original())
    assert "horace.io/brrr_intro.html" in text and "operator-fusion" in text
    library = await world.slash(learner, "library", query="pytorch", kind="post")
    reply = await library.original()
    assert reply.ephemeral
    assert "PyTorch internals" in _text(reply) and "Zero to Hero" not in _text(reply)


async def test_submissions_lists_only_your_own(world: World) -> None:
    mine, other = world.learner(), world.learner()
    handle = await world.submit(other, (SOLUTIONS / "wrong_values.py").read_bytes())
    await handle.wait_for(lambda m: m.content.startswith("Failed"), timeout=60)
    listing = await world.slash(mine, "submissions")
    reply = await listing.original(timeout=10)
    assert reply.ephemeral and "no submissions yet" in reply.content
    theirs = await world.slash(other, "submissions")
    reply = await theirs.original(timeout=10)
    assert reply.ephemeral and BUILD_TASK in _text(reply) and "failed" in _text(reply)


async def test_leaderboard_pages(world: World) -> None:
    for amount in range(1, 13):
        grant = await world.slash(
            world.owner, "admin xp", member=world.learner(), amount=1000 + amount, reason="seed"
        )
        await grant.original()
    board = await world.slash(world.learner(), "leaderboard", period="all")
    first = await board.wait_for(lambda m: bool(m.components), timeout=10)
    assert "Page 1/" in first.embeds[0]["footer"]["text"]
    next_id = next(
        c["custom_id"]
        for row in first.components
        for c in row["components"]
        if c.get("label") == "Next ▶"
    )
    click = await world.fake.click_button(first, next_id)
    second = await click.wait_for(lambda m: "Page 2/" in m.embeds[0]["footer"]["text"])
    assert "Page 2/" in second.embeds[0]["footer"]["text"]
    assert "`#11`" in second.embeds[0]["description"]


async def test_a_long_quiz_is_asked_in_pages(world: World) -> None:
    learner = world.learner()
    handle = await world.slash(learner, "answer", task="go-brrrr/name-the-bottleneck")
    first = await handle.modal()
    assert len(first["components"]) == 5 and "(1/2)" in first["title"]
    ids = [row["components"][0]["custom_id"] for row in first["components"]]
    answers = ["memory bandwidth"] * 4 + ["overhead"]
    saved = await world.fake.submit_modal(handle, dict(zip(ids, answers, strict=True)))
    prompt = await saved.original()
    assert "2 more question(s)" in prompt.content
    button = prompt.components[0]["components"][0]["custom_id"]
    click = await world.fake.click_button(prompt, button)
    second = await click.modal()
    assert len(second["components"]) == 2 and "(2/2)" in second["title"]
    ids = [row["components"][0]["custom_id"] for row in second["components"]]
    done = await world.fake.submit_modal(
        click, dict(zip(ids, ["overhead", "compute"], strict=True))
    )
    verdict = await done.original(timeout=10)
    # one page-1 answer (operator fusion) is wrong: 6 of 7 passes, worth round(40 x 6/7)
    assert verdict.content.startswith("Passed"), verdict.content
    assert _text(verdict).count("✓") == 6 and _text(verdict).count("✗") == 1
    assert _ledger(world, learner) == [("quiz", 34)]


async def test_a_speed_ranked_pass_says_how_fast_and_joins_the_speed_board(world: World) -> None:
    """The real worker runs the trial after the pass: the verdict says how fast against the
    reference and on what, and the member appears on that task's speed board."""
    learner = world.learner()
    task = "transformer-internals/stable-softmax"
    source = (SOLUTIONS / "transformer-internals" / "softmax_correct.py").read_bytes()
    handle = await world.submit(learner, source, task=task)
    verdict = await handle.wait_for(lambda m: m.content.startswith("Passed"), timeout=90)
    assert "× the reference on " in _text(verdict), _text(verdict)
    assert _statuses(world, learner) == ["passed"]
    board = await (await world.slash(learner, "leaderboard", board="speed", task=task)).original()
    assert f"<@{learner.id}>" in _text(board) and "×" in _text(board)
