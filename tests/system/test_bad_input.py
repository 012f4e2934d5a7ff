"""Bad input of every kind gets a specific answer, the bot keeps working, nothing is lost.

Cases already covered in tests/bot (and not repeated here): a .txt upload, an empty
.py, a NUL-byte .py, an oversized .py, a task typed by hand in /submit, a YAML
syntax error, a quest without tasks, ``@everyone`` in a quest, a bad setup time,
a bad time zone, a past and a malformed /admin schedule date.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from fakediscord import Message, User
from fakediscord import invocations as fake_invocations
from tests.bot.conftest import World, start_world
from tests.support import REPO

pytestmark = pytest.mark.asyncio(loop_scope="module")

BUILD = "go-brrrr/matmul-three-ways"
CORRECT = (REPO / "tests" / "graders" / "solutions" / "correct.py").read_text()
MIB = 1024 * 1024


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("bad"), workers=1):
        setup = await started.fake.invoke_slash(
            started.guild,
            started.quests,
            started.owner,
            "admin setup",
            options={"channel": started.quests, "time": "00:00"},
        )
        await setup.original()
        yield started


def _notebook(cells: list[dict[str, Any]], nbformat: int = 4) -> str:
    return json.dumps({"nbformat": nbformat, "nbformat_minor": 5, "metadata": {}, "cells": cells})


def _code(source: str, outputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "metadata": {},
        "execution_count": 1,
        "source": source.splitlines(keepends=True),
        "outputs": outputs or [],
    }


def _big_output(size: int) -> list[dict[str, Any]]:
    return [{"output_type": "stream", "name": "stdout", "text": ["x" * 99 + "\n"] * (size // 100)}]


def _nb(cells: list[dict[str, Any]], nbformat: int = 4) -> bytes:
    return _notebook(cells, nbformat).encode()


async def _reply(world: World, user: User, name: str, **kwargs: Any) -> Message:
    handle = await world.fake.invoke_slash(world.guild, world.quests, user, name, **kwargs)
    return await handle.wait_for(lambda m: not m.loading, timeout=15)


def _submissions_of(world: World, user: User) -> int:
    with sqlite3.connect(world.database) as db:
        return db.execute(
            "SELECT COUNT(*) FROM submissions JOIN members ON members.id = submissions.member_id "
            "WHERE members.user_id = ?",
            (user.id,),
        ).fetchone()[0]


def _ledger_of(world: World, user: User) -> list[int]:
    """The XP amounts stored for ``user``, oldest first."""
    with closing(sqlite3.connect(world.database)) as db:
        rows = db.execute(
            "SELECT xp_ledger.amount FROM xp_ledger JOIN members "
            "ON members.id = xp_ledger.member_id WHERE members.user_id = ? ORDER BY xp_ledger.id",
            (user.id,),
        ).fetchall()
    return [amount for (amount,) in rows]


async def _still_answers(world: World) -> None:
    """The bot is alive and writes: a fresh /done pays once."""
    learner = world.learner()
    reply = await _reply(world, learner, "done", options={"task": "go-brrrr/matrix-drill"})
    assert "+10 XP" in reply.content
    assert _ledger_of(world, learner) == [10]


# attachments -----------------------------------------------------------------------------

UPLOADS: list[tuple[str, bytes, str]] = [
    ("empty.ipynb", b"", "`empty.ipynb` is empty (0 bytes)"),
    ("ctl.py", bytes(range(1, 9)) * 20, "looks like a binary file, not text"),
    (
        "latin1.py",
        b"x = 1\nname = 'J\xf6rg'\n",
        "is not valid UTF-8: byte 0xf6 at offset 15 (line 2)",
    ),
    ("solution", b"x = 1\n", "`solution` is not a .py or .ipynb file"),
    ("solution.py.zip", b"PK\x03\x04", "`solution.py.zip` is not a .py or .ipynb file"),
    ("blank.py", b"\n   \n\t\n", "`blank.py` contains only whitespace"),
    ("broken.ipynb", b'{"cells": [', "not a notebook that can be graded: it is not valid JSON"),
    (
        "prose.ipynb",
        _nb([{"cell_type": "markdown", "metadata": {}, "source": ["# notes"]}]),
        "not a notebook that can be graded: it has no code cells",
    ),
    (
        "old.ipynb",
        _nb([_code("x = 1")], nbformat=3),
        "it is nbformat 3; only nbformat 4 notebooks are supported",
    ),
    (
        "huge-code.ipynb",
        _nb([_code("# padding\n" * 30_000)]),
        "the code cells of `huge-code.ipynb` add up to",
    ),
    (
        "outputs.ipynb",
        _nb([_code(CORRECT, _big_output(2 * MIB + 100 * 1024))]),
        "`outputs.ipynb` is 2.2 MiB; the limit is 2 MiB",
    ),
]


@pytest.mark.parametrize(("filename", "data", "words"), UPLOADS, ids=[u[0] for u in UPLOADS])
async def test_bad_uploads_are_refused_with_the_reason(
    world: World, filename: str, data: bytes, words: str
) -> None:
    learner = world.learner()
    reply = await _reply(
        world, learner, "submit", options={"task": BUILD}, attachments=[(filename, data)]
    )
    assert words in reply.content, reply.content
    assert reply.ephemeral and _submissions_of(world, learner) == 0


async def test_a_notebook_with_big_outputs_under_the_cap_is_graded(world: World) -> None:
    data = _nb([_code(CORRECT, _big_output(int(1.5 * MIB)))])
    assert 1.4 * MIB < len(data) < 2 * MIB
    handle = await world.fake.invoke_slash(
        world.guild,
        world.quests,
        world.learner(),
        "submit",
        options={"task": BUILD},
        attachments=[("outputs.ipynb", data)],
    )
    verdict = await handle.wait_for(lambda m: m.content.startswith("Passed"), timeout=90)
    assert "+60 XP" in verdict.content


# quest YAML ------------------------------------------------------------------------------

QUEST = """id: extra
title: Extra practice
phase: foundations
summary: More practice.
readings:
  - ref: brrr-intro
    note: read it again
tasks:
  - id: drill
    title: Drill
    kind: exercise
    xp: 10
    prompt: Do the drill.
"""

YAML_CASES: list[tuple[str, str, str]] = [
    ("types", QUEST.replace("xp: 10", "xp: lots"), "`tasks[0].xp` should be a valid integer"),
    ("not-a-mapping", "- just\n- a list\n", "should be a mapping of fields (got a list)"),
    (
        "bad-colon",
        QUEST.replace("title: Drill", "title: Drill: [oops"),
        "mapping values are not allowed here",
    ),
    (
        "reading",
        QUEST.replace("ref: brrr-intro", "ref: no-such-reading"),
        "unknown reading `no-such-reading`",
    ),
    (
        "grader",
        QUEST.replace(
            "kind: exercise",
            "kind: build\n    grader: no_such_grader\n    interface: [f(x) -> Tensor]",
        ),
        "no_such_grader",
    ),
    (
        "prerequisite",
        QUEST.replace("phase: foundations", "phase: foundations\nprerequisite: no-such-quest"),
        "unknown prerequisite quest `no-such-quest`",
    ),
    (
        "duplicate-task",
        QUEST
        + "  - id: drill\n    title: Again\n    kind: exercise\n    xp: 5\n    prompt: Again.\n",
        "duplicate task id `drill` (first at line 9)",
    ),
    ("here", QUEST.replace("More practice.", "Hey @here, more practice."), "would ping"),
    ("user", QUEST.replace("More practice.", "Thanks <@123456789012345678>."), "would ping"),
]


@pytest.mark.parametrize(("case", "text", "words"), YAML_CASES, ids=[c[0] for c in YAML_CASES])
async def test_bad_quest_yaml_is_explained_without_pinging(
    world: World, case: str, text: str, words: str
) -> None:
    reply = await _reply(
        world, world.owner, "admin quest-add", attachments=[(f"{case}.yaml", text.encode())]
    )
    assert "The quest has problems" in reply.content and words in reply.content, reply.content
    assert not reply.pings.everyone and not reply.pings.users and not reply.pings.roles


async def test_a_role_mention_in_a_quest_does_not_ping_the_role(world: World) -> None:
    text = QUEST.replace("Do the drill.", f"Ask <@&{world.mods.id}> for help.")
    reply = await _reply(
        world, world.owner, "admin quest-add", attachments=[("r.yaml", text.encode())]
    )
    assert "would ping" in reply.content and not reply.pings.roles


@pytest.mark.parametrize(
    ("filename", "data", "words"),
    [
        ("quest.txt", QUEST.encode(), "Attach the quest as a .yaml file."),
        ("latin1.yaml", QUEST.replace("More", "M\xf6re").encode("latin-1"), "is not UTF-8 text"),
        ("huge.yaml", QUEST.encode() + b"#" * (300 * 1024), "over 256 KiB"),
    ],
)
async def test_quest_files_that_are_not_quest_yaml(
    world: World, filename: str, data: bytes, words: str
) -> None:
    reply = await _reply(world, world.owner, "admin quest-add", attachments=[(filename, data)])
    assert words in reply.content, reply.content


# command arguments -----------------------------------------------------------------------

ARGUMENTS: list[tuple[str, str, Mapping[str, Any], str]] = [
    ("learner", "done", {"task": "go-brrrr/nope"}, "There is no task `go-brrrr/nope`"),
    ("learner", "answer", {"task": "nope/nope"}, "There is no task `nope/nope`"),
    ("learner", "done", {"task": BUILD}, "is a build task: use `/submit` for it"),
    ("learner", "quest", {"quest": "no-such-quest"}, "There is no quest `no-such-quest`"),
    ("owner", "admin xp", {"amount": 0, "reason": "r"}, "A grant of 0 XP changes nothing."),
    ("owner", "admin schedule", {"quest": "go-brrrr", "date": "2099-02-30"}, "is not a date"),
    ("owner", "admin schedule", {"quest": "nope", "date": "2099-01-01"}, "There is no quest"),
    ("owner", "admin post-leaderboard", {"week": "2026-W99"}, "is not a week like 2026-W48"),
    (
        "owner",
        "admin post-quest",
        {"quest": "nope"},
        "There is no quest `nope` in this server's map",
    ),
    ("owner", "admin quest-disable", {"quest": "nope"}, "There is no quest `nope`"),
    ("owner", "admin regrade", {"submission": 999_999}, "There is no submission #999999"),
    ("owner", "admin speed-void", {"submission": 999_999, "reason": "r"}, "no submission #999999"),
    ("owner", "admin speed-restore", {"submission": 999_999}, "There is no submission #999999"),
    ("owner", "admin setup", {"time": "9am"}, "is not a time of day"),
    ("owner", "admin setup", {"timezone": "UTC+2"}, "not an IANA time zone"),
]


@pytest.mark.parametrize(
    ("who", "name", "options", "words"),
    ARGUMENTS,
    ids=[f"{a[1]}-{i}" for i, a in enumerate(ARGUMENTS)],
)
async def test_bad_arguments_get_a_specific_answer(
    world: World, who: str, name: str, options: Mapping[str, Any], words: str
) -> None:
    user = world.owner if who == "owner" else world.learner()
    filled = dict(options)
    if name == "admin xp":
        filled["member"] = world.learner()
    if name == "admin setup":
        filled["channel"] = world.quests
    reply = await _reply(world, user, name, options=filled)
    assert words in reply.content, reply.content
    assert reply.ephemeral


async def test_out_of_range_xp_is_refused_by_discord_and_by_the_bot(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    learner = world.learner()
    options = {"member": learner, "amount": 10_001, "reason": "typo"}
    with pytest.raises(ValueError, match="out of bounds"):  # the client enforces min/max
        await world.fake.invoke_slash(
            world.guild, world.quests, world.owner, "admin xp", options=options
        )
    # A client that skips the check: the bot refuses by itself.
    monkeypatch.setattr(fake_invocations, "_check_bounds", lambda spec, value: None)
    for amount in (10_001, -1_000_000):
        reply = await _reply(world, world.owner, "admin xp", options={**options, "amount": amount})
        assert f"{amount:+,} XP is out of range" in reply.content, reply.content
    assert _ledger_of(world, learner) == []


# storage ---------------------------------------------------------------------------------


async def test_a_locked_database_makes_the_bot_wait_then_answer(world: World) -> None:
    learner = world.learner()
    db = sqlite3.connect(world.database, isolation_level=None, timeout=5)
    try:
        db.execute("BEGIN EXCLUSIVE")
        handle = await world.fake.invoke_slash(
            world.guild, world.quests, learner, "done", options={"task": "go-brrrr/zero-to-hero"}
        )
        await handle.acked()  # deferred: the bot is on to the database work
        with pytest.raises(TimeoutError):  # waiting on the lock, not failing
            await handle.wait_for(lambda m: not m.loading, timeout=1.5)
    finally:
        db.execute("COMMIT")
        db.close()
    reply = await handle.wait_for(lambda m: not m.loading, timeout=15)
    assert "+20 XP" in reply.content
    assert _ledger_of(world, learner) == [20]
    await _still_answers(world)


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")


def _fill(where: Path) -> Path:
    """Write until the file system is full; the filler file is returned for freeing."""
    filler = where / "filler"
    # unbuffered, and the suppress outside the file: closing a buffered file on a full disk
    # raises ENOSPC again, from the part of the last write that only reached the buffer
    with contextlib.suppress(OSError), filler.open("wb", buffering=0) as out:
        while True:
            out.write(b"\0" * 64 * 1024)
            os.fsync(out.fileno())
    return filler


async def test_a_full_disk_is_reported_and_nothing_is_lost(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    base = tmp_path_factory.mktemp("full")
    (base / "bot").mkdir()
    disk = base / "disk"
    _mount_tmpfs(disk, "8m")
    try:
        env = {"DATABASE_URL": f"sqlite+aiosqlite:///{disk}/brrrbot.sqlite3"}
        async for small in start_world(base / "bot", workers=0, extra_env=env):
            learner = small.learner()
            filler = _fill(disk)
            handle = await small.fake.invoke_slash(
                small.guild,
                small.quests,
                learner,
                "done",
                options={"task": "go-brrrr/matrix-drill"},
            )
            reply = await handle.wait_for(lambda m: not m.loading, timeout=15)
            assert "storage is full, so nothing was saved" in reply.content, reply.content
            filler.unlink()
            again = await small.fake.invoke_slash(
                small.guild,
                small.quests,
                learner,
                "done",
                options={"task": "go-brrrr/matrix-drill"},
            )
            assert "+10 XP" in (await again.wait_for(lambda m: not m.loading, timeout=15)).content
    finally:
        await asyncio.to_thread(
            subprocess.run, ["umount", "-l", str(disk)], check=False, capture_output=True
        )


async def test_the_bot_still_answers_after_all_of_it(world: World) -> None:
    await _still_answers(world)
    assert world.bot.returncode is None
