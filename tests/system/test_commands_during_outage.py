"""Every command and button while the database is away, as members and moderators meet it:
another process holds SQLite's write lock past the bot's busy timeout, or the PostgreSQL
server is stopped.

Each interaction must be acknowledged within Discord's 3 s (the fake, like Discord, refuses
a first response after that, and the member would see "This interaction failed"), and then
answered: what has to write is told, word for word, that nothing was saved; what SQLite can
answer from a snapshot (its readers never wait for the writer) answers as usual; and once
the database is back, nothing the members were told was not saved has been written after all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.db.engine import SQLITE_BUSY_TIMEOUT_MS
from bot.exts.admin.shared import NOT_AUDITED
from bot.outage import UNAVAILABLE_REPLY
from fakediscord import InteractionHandle, Message, Permission, Role
from tests.bot.conftest import CORRECT, START, World, start_world
from tests.bot.test_admin import ADDED_QUEST
from tests.outages import held_write_lock, stopped_server
from tests.postgres_server import PostgresServer, started_postgres
from tests.support import BUILD_TASK
from tests.system.database import SystemDatabase

QUIZ = "go-brrrr/shape-predictions"
#: a day ahead of the bot's clock, for /admin schedule
LATER_DAY = (START + timedelta(days=30)).date().isoformat()
ANOTHER_QUEST = ADDED_QUEST.replace("id: matmul-again", "id: during-the-outage", 1).encode()
EXERCISE = "go-brrrr/matrix-drill"
#: what the bot writes on its own, whatever the members do (its heartbeat, the posts, roles)
BACKGROUND_TABLES = {
    "bot_state",
    "post_log",
    "role_sync_queue",
    "role_grants",
    "weekly_champions",
    "worker_heartbeats",
    "alembic_version",
}
#: a command waits for SQLite's lock at most the busy timeout, and for a pooled connection
#: while the pool's 15 are all waiting: two rounds, with room for a loaded machine
ANSWERED_WITHIN_S = 2 * SQLITE_BUSY_TIMEOUT_MS / 1000 + 20


@dataclass(frozen=True)
class Case:
    """One interaction during the outage: ``needs`` says what it stands on.

    ``write``: it must be told nothing was saved; ``read``: on SQLite it answers as usual
    (``usual`` is in that answer), on a stopped server it is told the database is away;
    ``nothing``: it needs no database and answers as usual on both.
    """

    name: str
    needs: str
    start: Start
    usual: str = ""


@dataclass
class Scene:
    """What the members had in front of them when the database went away."""

    board: Message  # a two-page leaderboard
    preview: Message  # a quest-add preview with its Publish button
    confirm: Message  # a /privacy delete confirmation
    menu: Message  # the task select of "Submit solution"
    quiz: InteractionHandle  # /answer, its modal open
    quiz_fields: list[str]
    submission: int  # a queued submission, for /admin regrade
    level_role: Role  # a role the bot may give


Start = Callable[[World, Scene], Awaitable[InteractionHandle]]


def _slash(name: str, **options: Any) -> Start:
    """``/name`` by the owner (/admin) or a new member; an option given as a function is
    computed from the world and the scene when the command is run."""

    async def start(world: World, scene: Scene) -> InteractionHandle:
        user = world.owner if name.startswith("admin") else world.learner()
        resolved = {k: v(world, scene) if callable(v) else v for k, v in options.items()}
        return await world.slash(user, name, **resolved)

    return start


def _button(shown: Callable[[Scene], Message], label: str) -> Start:
    async def start(world: World, scene: Scene) -> InteractionHandle:
        message = shown(scene)
        return await world.fake.click_button(message, _custom_id(message, label))

    return start


async def _pick_task(world: World, scene: Scene) -> InteractionHandle:
    (menu,) = [c for row in scene.menu.components for c in row["components"] if c.get("type") == 3]
    return await world.fake.select(scene.menu, menu["custom_id"], [BUILD_TASK])


async def _submit_quiz(world: World, scene: Scene) -> InteractionHandle:
    values = ["4x128x128", "(4, 128, 128)", "(4, 64, 64)"]
    return await world.fake.submit_modal(
        scene.quiz, dict(zip(scene.quiz_fields, values, strict=True))
    )


async def _submit_message(world: World, scene: Scene) -> InteractionHandle:
    learner = world.learner()
    posted = await world.fake.post_as(learner, world.quests, f"```python\n{CORRECT.decode()}```")
    return await world.fake.invoke_message_command(
        world.guild, world.quests, learner, "Submit solution", target=posted
    )


def _new_member(world: World, scene: Scene) -> Any:
    return world.learner()


CASES = [
    Case("help", "read", _slash("help"), "/submit"),
    Case("today", "read", _slash("today"), "Today's quest"),
    Case("quest", "read", _slash("quest", quest="go-brrrr"), "Go Brrrr"),
    Case("quests", "read", _slash("quests"), "Go Brrrr"),
    Case("readings", "read", _slash("readings"), "Readings"),
    Case("library", "nothing", _slash("library", query="roofline"), "roofline"),
    Case("leaderboard", "read", _slash("leaderboard", period="all"), "Page 1/2"),
    Case("profile", "write", _slash("profile")),
    Case("submit", "write", _slash("submit", task=BUILD_TASK, file=("s.py", CORRECT))),
    Case("submissions", "write", _slash("submissions")),
    Case("answer", "write", _submit_quiz),
    Case("done", "write", _slash("done", task=EXERCISE)),
    Case("privacy hide", "write", _slash("privacy hide")),
    Case("privacy show", "write", _slash("privacy show")),
    Case("privacy share", "write", _slash("privacy share", state="on")),
    Case("solutions", "read", _slash("solutions", task=BUILD_TASK), "open to members who passed"),
    Case("privacy export", "read", _slash("privacy export"), "keeps nothing"),
    Case("privacy delete", "nothing", _slash("privacy delete"), "Nobody can undo this"),
    Case("token new", "write", _slash("token new")),
    Case("token revoke", "write", _slash("token revoke")),
    Case("Submit solution", "read", _submit_message, "Which build task"),
    Case("Submit solution (the task picked)", "write", _pick_task),
    Case("admin setup", "write", _slash("admin setup", time="07:30")),
    # the post goes out (SQLite's snapshot has what it shows); its audit entry cannot be written
    Case("admin post-quest", "read", _slash("admin post-quest"), NOT_AUDITED),
    Case("admin post-leaderboard", "read", _slash("admin post-leaderboard"), NOT_AUDITED),
    Case(
        "admin quest-add",
        "write",
        _slash(
            "admin quest-add", file=("q.yaml", ADDED_QUEST.replace("matmul-again", "q2").encode())
        ),
    ),
    Case("admin quest-disable", "write", _slash("admin quest-disable", quest="go-brrrr")),
    Case("admin schedule", "write", _slash("admin schedule", quest="go-brrrr", date=LATER_DAY)),
    Case(
        "admin xp",
        "write",
        _slash("admin xp", member=_new_member, amount=5, reason="outage"),
    ),
    Case("admin regrade", "write", _slash("admin regrade", submission=lambda _, s: s.submission)),
    Case(
        "admin speed-void",
        "write",
        _slash("admin speed-void", submission=lambda _, s: s.submission, reason="outage"),
    ),
    Case(
        "admin speed-restore",
        "write",
        _slash("admin speed-restore", submission=lambda _, s: s.submission),
    ),
    Case("admin export", "read", _slash("admin export"), "Leaderboard ("),
    Case("admin deliveries", "read", _slash("admin deliveries"), "No failed deliveries"),
    Case("admin similar", "read", _slash("admin similar", task=BUILD_TASK), "near-cop"),
    Case(
        "admin roles add",
        "write",
        _slash("admin roles add", level=3, role=lambda _, s: s.level_role),
    ),
    Case("admin roles remove", "write", _slash("admin roles remove", level=3)),
    Case("admin roles list", "read", _slash("admin roles list"), "Mode: **stack**"),
    Case("admin roles mode", "write", _slash("admin roles mode", mode="highest")),
    Case("admin token-revoke", "write", _slash("admin token-revoke", member=_new_member)),
    Case("the leaderboard's next page", "read", _button(lambda s: s.board, "Next ▶"), "Page 2/2"),
    Case("a preview's Publish", "write", _button(lambda s: s.preview, "Publish")),
    Case("Delete my data", "write", _button(lambda s: s.confirm, "Delete my data")),
]

#: the tables members' commands write; the bot's own background writes are left out
MEMBER_TABLES = (
    "guilds",
    "members",
    "guild_quests",
    "quest_schedule",
    "submissions",
    "grading_jobs",
    "xp_ledger",
    "audit_log",
    "member_xp",
    "level_roles",
    "quest_drafts",
    "api_tokens",
    "speed_results",
    "solution_reads",
    "solution_fingerprints",
    "near_copies",
)


@pytest.fixture(params=["sqlite", "postgresql"])
def own_server(request: pytest.FixtureRequest) -> Iterator[PostgresServer | None]:
    """None for SQLite; else a PostgreSQL server this test alone stops and starts."""
    if request.param == "sqlite":
        yield None
        return
    server = started_postgres()
    try:
        yield server
    finally:
        server.stop()


def _custom_id(message: Message, label: str) -> str:
    for row in message.components:
        for component in row["components"]:
            if component.get("label") == label:
                return str(component["custom_id"])
    raise AssertionError(f"no {label!r} button")


def _text(message: Message) -> str:
    """Everything a member reads in a message: content and embed text."""
    parts = [message.content]
    for embed in message.embeds:
        parts += [embed.get("title", ""), embed.get("description", "")]
        parts += [f"{f['name']} {f['value']}" for f in embed.get("fields", [])]
        parts.append(embed.get("footer", {}).get("text", ""))
        parts.append(embed.get("author", {}).get("name", ""))
    return "\n".join(parts)


async def _scene(world: World, database: SystemDatabase) -> Scene:
    """Set the server up, then leave every kind of pending thing a member can act on."""
    setup = await world.slash(
        world.owner, "admin setup", channel=world.quests, time="00:00", moderator_role=world.mods
    )
    assert (await setup.original(timeout=15)).content.startswith("The daily quest goes to")
    await world.settle()  # the day's (and the week's) post is out: the bot's own writes done
    mine = world.fake.bot_role(world.guild)  # an admin lets the bot give level roles
    await world.fake.update_role(
        mine, position=40, permissions=mine.permissions | Permission.MANAGE_ROLES
    )
    for amount in range(1, 12):  # eleven members with XP: two pages of ten
        grant = await world.slash(
            world.owner, "admin xp", member=world.learner(), amount=amount, reason="scene"
        )
        assert "XP for" in (await grant.original(timeout=15)).content
    board = await world.slash(world.learner(), "leaderboard", period="all")
    quest = ADDED_QUEST.encode()
    added = await world.slash(world.owner, "admin quest-add", file=("q.yaml", quest))
    confirm = await world.slash(world.learner(), "privacy delete")
    author = world.learner()
    code = await world.fake.post_as(author, world.quests, f"```python\n{CORRECT.decode()}```")
    menu = await world.fake.invoke_message_command(
        world.guild, world.quests, author, "Submit solution", target=code
    )
    quiz = await world.slash(world.learner(), "answer", task=QUIZ)
    modal = await quiz.modal()
    queued = await (await world.submit(world.learner())).original(timeout=15)
    assert queued.content.startswith("Queued"), queued.content
    ((submission,),) = database.query("SELECT max(id) FROM submissions")
    return Scene(
        board=await board.wait_for(lambda m: bool(m.components), timeout=15),
        preview=await added.wait_for(lambda m: bool(m.components), timeout=15),
        confirm=await confirm.original(timeout=15),
        menu=await menu.wait_for(lambda m: bool(m.components), timeout=15),
        quiz=quiz,
        quiz_fields=[row["components"][0]["custom_id"] for row in modal["components"]],
        submission=int(submission),
        level_role=world.fake.add_role(world.guild, "adept", position=3),
    )


def _snapshot(database: SystemDatabase) -> dict[str, list[str]]:
    return {
        table: sorted(map(repr, database.query(f"SELECT * FROM {table}")))
        for table in MEMBER_TABLES
    }


def _expected(case: Case, backend: str) -> str:
    """What the member must read: the usual answer's words, or that nothing was saved."""
    if case.needs == "nothing" or (case.needs == "read" and backend == "sqlite"):
        return case.usual
    return UNAVAILABLE_REPLY


async def _answer(case: Case, handle: InteractionHandle, backend: str) -> str | None:
    """The problem with how ``handle`` was answered, or None."""
    try:
        seconds = await handle.acked()
    except TimeoutError:
        return "not acknowledged within 3.5 s"
    if seconds >= 3.0:
        return f"acknowledged after {seconds:.2f} s"
    want = _expected(case, backend)
    try:
        message = await handle.wait_for(
            lambda m: not m.loading and (m.content == UNAVAILABLE_REPLY or want in _text(m)),
            timeout=ANSWERED_WITHIN_S,
        )
    except TimeoutError:
        now = handle.record.original_id and handle._world.messages.get(handle.record.original_id)
        return f"never answered with {want!r}; it reads {now and _text(now)!r}"
    if want == UNAVAILABLE_REPLY and message.content != UNAVAILABLE_REPLY:
        return f"answered {message.content!r}, not that nothing was saved"
    if want != UNAVAILABLE_REPLY and message.content == UNAVAILABLE_REPLY:
        return f"told the database is away, though it needs {case.needs}"
    if handle.rejections:
        return f"Discord refused a response: {handle.rejections[0]}"
    return None


async def test_every_interaction_during_an_outage_is_acknowledged_in_time_and_answered_truly(
    tmp_path: Path, own_server: PostgresServer | None
) -> None:
    env = {}
    if own_server is not None:
        env["DATABASE_URL"] = await own_server.create_database(migrated=False)
    async for world in start_world(tmp_path, workers=0, clock=True, extra_env=env):
        database = SystemDatabase(env.get("DATABASE_URL", f"sqlite+aiosqlite:///{world.database}"))
        try:
            registered = {
                f"{c.name} {sub['name']}" if sub else c.name
                for c in world.fake.commands()
                for sub in _subcommands(c.data) or [None]
            }
            assert registered <= {case.name for case in CASES}, "commands no case covers"
            scene = await _scene(world, database)
            before = _snapshot(database)
            away = (
                held_write_lock(world.database)
                if own_server is None
                else stopped_server(own_server)
            )
            backend = "sqlite" if own_server is None else "postgresql"
            async with away:
                print(f"OUTAGE ({backend}): {len(CASES)} interactions now", flush=True)
                handles = [await case.start(world, scene) for case in CASES]
                problems = await asyncio.gather(
                    *(_answer(c, h, backend) for c, h in zip(CASES, handles, strict=True))
                )
            wrong = {c.name: p for c, p in zip(CASES, problems, strict=True) if p}
            assert not wrong, "\n".join(f"{name}: {problem}" for name, problem in wrong.items())
            assert "Traceback" not in world.bot.output, world.bot.output[-3000:]

            barrier = world.learner()  # the database answers again: one submission gets in
            await _queued_once_back(world, barrier)
            after = _snapshot(database)
            changed = {t for t in MEMBER_TABLES if after[t] != before[t]}
            assert changed == {"members", "submissions", "grading_jobs"}, changed
            for table in changed:
                assert len(after[table]) == len(before[table]) + 1, table
        finally:
            database.close()


def _subcommands(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A command's subcommands (through its groups), or [] for a plain command."""
    found = []
    for option in data.get("options", []):
        if option["type"] == 1:
            found.append(option)
        elif option["type"] == 2:
            found += [
                {**sub, "name": f"{option['name']} {sub['name']}"} for sub in option["options"]
            ]
    return found


async def _queued_once_back(world: World, member: Any) -> None:
    """``member`` submits until it is queued (a server just started may refuse a moment)."""
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        reply = (await (await world.submit(member)).original(timeout=15)).content
        if reply.startswith("Queued"):
            return
        assert reply == UNAVAILABLE_REPLY, reply
        assert asyncio.get_running_loop().time() < deadline, "never queued after the outage"
