"""Who may run /admin (checked by the bot, whatever Discord shows), and who sees whose code."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import closing

import pytest
import pytest_asyncio

from fakediscord import User
from tests.bot.conftest import World, start_world
from tests.bot.test_learner_commands import _text
from tests.support import REPO

pytestmark = pytest.mark.asyncio(loop_scope="module")

BUILD = "go-brrrr/matmul-three-ways"
#: unique enough to find anywhere it leaks
SECRET = "secret-marker-7f3a"
# The last line raises, so the verdict quotes it: the author's verdict carries a line of
# the code, and the test can see where that verdict goes.
SOLUTION = (REPO / "tests" / "graders" / "solutions" / "wrong_values.py").read_text() + (
    f'\nraise RuntimeError("{SECRET}")\n'
)
#: what an /admin subcommand writes when it runs; a refused one must leave all of it alone
ADMIN_STATE = (
    "guilds",
    "guild_quests",
    "quest_schedule",
    "audit_log",
    "xp_ledger",
    "grading_jobs",
    "level_roles",
    "quest_drafts",
    "api_tokens",
)
SUBCOMMANDS = [
    "admin setup",
    "admin post-quest",
    "admin post-leaderboard",
    "admin quest-add",
    "admin quest-disable",
    "admin schedule",
    "admin xp",
    "admin regrade",
    "admin speed-void",
    "admin speed-restore",
    "admin export",
    "admin deliveries",
    "admin similar",
    "admin roles add",
    "admin roles remove",
    "admin roles list",
    "admin roles mode",
    "admin token-revoke",
]
REFUSED = "Only moderators can use /admin"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("perms"), workers=1):
        setup = await started.fake.invoke_slash(
            started.guild,
            started.quests,
            started.owner,
            "admin setup",
            options={"channel": started.quests, "time": "00:00", "moderator_role": started.mods},
        )
        await setup.original()
        started.fake.set_command_permission(started.guild, "admin", started.mods, allow=True)
        yield started


def _options(world: World, name: str) -> dict[str, object]:
    return {
        "admin setup": {"channel": world.quests, "moderator_role": world.mods},
        "admin post-quest": {},
        "admin post-leaderboard": {},
        "admin quest-add": {"file": ("q.txt", b"not yaml")},
        "admin quest-disable": {"quest": "no-such-quest"},
        "admin schedule": {"quest": "go-brrrr", "date": "2099-01-01"},
        "admin xp": {"member": world.learner(), "amount": 1, "reason": "permission test"},
        "admin regrade": {"submission": 999_999},
        "admin speed-void": {"submission": 999_999, "reason": "permission test"},
        "admin speed-restore": {"submission": 999_999},
        "admin export": {},
        "admin deliveries": {},
        "admin similar": {"task": "go-brrrr/matmul-three-ways"},
        "admin roles add": {"level": 2, "role": world.mods},
        "admin roles remove": {"level": 99},
        "admin roles list": {},
        "admin roles mode": {"mode": "highest"},
        "admin token-revoke": {"member": world.learner()},
    }[name]


def _admin_state(world: World) -> dict[str, list[tuple[object, ...]]]:
    with closing(sqlite3.connect(world.database)) as db:
        return {
            table: db.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
            for table in ADMIN_STATE
        }


async def _run(world: World, user: User, name: str) -> str:
    handle = await world.fake.invoke_slash(
        world.guild, world.quests, user, name, options=_options(world, name)
    )
    reply = await handle.wait_for(lambda m: not m.loading, timeout=15)
    assert reply.ephemeral
    return reply.content


async def test_every_admin_subcommand_is_checked_here(world: World) -> None:
    """A new /admin subcommand must join the permission test below."""
    (admin,) = [c for c in world.fake.commands() if c.name == "admin"]
    registered = set()
    for option in admin.data["options"]:
        if option["type"] == 2:  # a subcommand group: its subcommands
            registered |= {f"admin {option['name']} {sub['name']}" for sub in option["options"]}
        else:
            registered.add(f"admin {option['name']}")
    assert registered == set(SUBCOMMANDS)


@pytest.mark.parametrize("name", SUBCOMMANDS)
async def test_each_admin_subcommand_by_member_moderator_and_manager(
    world: World, name: str
) -> None:
    member = world.learner()
    world.fake.set_command_permission(world.guild, "admin", member, allow=True)
    before = _admin_state(world)
    assert REFUSED in await _run(world, member, name)
    assert _admin_state(world) == before, "a refused /admin command changed the database"
    for allowed in (world.moderator, world.owner):
        answer = await _run(world, allowed, name)
        assert REFUSED not in answer and "went wrong" not in answer, answer


async def _submit(world: World, learner: User) -> int:
    handle = await world.fake.invoke_slash(
        world.guild,
        world.quests,
        learner,
        "submit",
        options={"task": BUILD},
        attachments=[("solution.py", SOLUTION.encode())],
    )
    verdict = await handle.wait_for(lambda m: m.content.startswith("Failed"), timeout=60)
    assert verdict.ephemeral
    assert SECRET in _text(verdict)  # the author sees the quoted line of their code
    with closing(sqlite3.connect(world.database)) as db:
        (submission,) = db.execute(
            "SELECT submissions.id FROM submissions "
            "JOIN members ON members.id = submissions.member_id WHERE members.user_id = ?",
            (learner.id,),
        ).fetchone()
    return submission


async def _delivered_via(world: World, submission: int, timeout: float = 30) -> str:
    """How the bot delivered the verdict, once it has recorded that every send is done."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with closing(sqlite3.connect(world.database)) as db:
            row = db.execute(
                "SELECT delivered_via FROM submissions WHERE id = ? AND delivered_at IS NOT NULL",
                (submission,),
            ).fetchone()
        if row:
            return row[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"submission #{submission} not marked delivered within {timeout} s")


async def test_no_one_sees_another_members_code_or_verdict(world: World) -> None:
    author, other = world.learner(), world.learner()
    submission = await _submit(world, author)
    # /submissions: the other member sees nothing of it.
    handle = await world.fake.invoke_slash(world.guild, world.quests, other, "submissions")
    listing = await handle.wait_for(lambda m: not m.loading, timeout=10)
    assert listing.ephemeral and BUILD not in _text(listing)
    # A regrade tells the moderator only that it is queued; the verdict goes to the author.
    handle = await world.fake.invoke_slash(
        world.guild,
        world.quests,
        world.moderator,
        "admin regrade",
        options={"submission": submission},
    )
    regrade = await handle.wait_for(lambda m: not m.loading, timeout=10)
    assert f"Submission #{submission} is queued" in regrade.content
    dm = await world.fake.wait_for_dm(author, lambda m: m.content.startswith("Failed"), 60)
    assert SECRET in _text(dm)  # the regraded verdict, code line and all, went to the author
    assert await _delivered_via(world, submission) == "dm"  # and the delivery is over
    # Nothing public, and nothing sent to anyone else, carries the code or the verdict.
    public = [_text(m) for m in world.fake.messages_in(world.quests)]
    elsewhere = [_text(m) for m in world.fake.dms_to(other) + world.fake.dms_to(world.moderator)]
    assert not any(SECRET in text for text in public + elsewhere)
    assert SECRET not in _text(regrade)
    assert not any("Traceback" in text for text in public + elsewhere)
