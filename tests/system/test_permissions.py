"""Who may run /admin (checked by the bot, whatever Discord shows), and who sees whose code."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.bot.conftest import World, start_world
from tests.bot.test_learner_commands import _text
from tests.fakediscord import User
from tests.support import REPO

pytestmark = pytest.mark.asyncio(loop_scope="module")

BUILD = "go-brrrr/matmul-three-ways"
#: unique enough to find anywhere it leaks
SECRET = "# secret-marker-7f3a\n"
SOLUTION = SECRET + (REPO / "tests" / "graders" / "solutions" / "wrong_values.py").read_text()
SUBCOMMANDS = [
    "admin setup",
    "admin post-quest",
    "admin post-leaderboard",
    "admin quest-add",
    "admin quest-disable",
    "admin schedule",
    "admin xp",
    "admin regrade",
    "admin export",
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
        "admin export": {},
    }[name]


async def _run(world: World, user: User, name: str) -> str:
    handle = await world.fake.invoke_slash(
        world.guild, world.quests, user, name, options=_options(world, name)
    )
    reply = await handle.wait_for(lambda m: not m.loading, timeout=15)
    assert reply.ephemeral
    return reply.content


@pytest.mark.parametrize("name", SUBCOMMANDS)
async def test_each_admin_subcommand_by_member_moderator_and_manager(
    world: World, name: str
) -> None:
    member = world.learner()
    world.fake.set_command_permission(world.guild, "admin", member, allow=True)
    assert REFUSED in await _run(world, member, name)
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
    with sqlite3.connect(world.database) as db:
        return db.execute("SELECT MAX(id) FROM submissions").fetchone()[0]


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
    assert dm.content
    # Nothing public, and nothing sent to anyone else, carries the code.
    public = [_text(m) for m in world.fake.messages_in(world.quests)]
    elsewhere = [_text(m) for m in world.fake.dms_to(other) + world.fake.dms_to(world.moderator)]
    assert not any("secret-marker-7f3a" in text for text in public + elsewhere)
    assert "secret-marker-7f3a" not in _text(regrade)
    assert not any("max abs error" in text for text in public)
