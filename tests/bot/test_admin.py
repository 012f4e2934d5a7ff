"""The /admin group: permissions checked by the bot itself, and what each subcommand does."""

from __future__ import annotations

import csv
import io
import sqlite3
from contextlib import closing

import pytest

from fakediscord import Message, User
from tests.bot.conftest import World
from tests.bot.test_learner_commands import _text
from tests.support import BUILD_TASK, REPO, SOLUTIONS

pytestmark = pytest.mark.asyncio(loop_scope="module")

SUBCOMMANDS = {
    "admin setup": {"channel": "quests"},
    "admin post-quest": {},
    "admin post-leaderboard": {},
    "admin quest-disable": {"quest": "go-brrrr"},
    "admin schedule": {"quest": "go-brrrr", "date": "2099-01-01"},
    "admin xp": {"member": "self", "amount": 5, "reason": "test"},
    "admin regrade": {"submission": 1},
    "admin speed-void": {"submission": 1, "reason": "test"},
    "admin speed-restore": {"submission": 1},
    "admin export": {},
    "admin deliveries": {},
    "admin similar": {"task": BUILD_TASK},
}


def _options(world: World, name: str, user: User) -> dict[str, object]:
    options = dict(SUBCOMMANDS[name])
    if "channel" in options:
        options["channel"] = world.quests
    if options.get("member") == "self":
        options["member"] = user
    return options


async def _setup(world: World) -> None:
    handle = await world.slash(
        world.owner, "admin setup", channel=world.quests, time="00:00", moderator_role=world.mods
    )
    assert "The daily quest goes to" in (await handle.original()).content


async def test_a_plain_member_cannot_see_admin(world: World) -> None:
    learner = world.learner()
    with pytest.raises(PermissionError):  # Discord hides it: default_member_permissions
        await world.slash(learner, "admin export")


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
async def test_the_bot_refuses_a_plain_member_even_if_discord_lets_them(
    world: World, name: str
) -> None:
    learner = world.learner()
    world.fake.set_command_permission(world.guild, "admin", learner, allow=True)
    handle = await world.slash(learner, name, **_options(world, name, learner))
    reply = await handle.original()
    assert reply.ephemeral and "Only moderators can use /admin" in reply.content


async def test_setup_posts_todays_quest_within_seconds(world: World) -> None:
    await _setup(world)
    posted = await world.fake.wait_for_message(
        world.quests, lambda m: "Quest of the day" in _text(m), timeout=10
    )
    assert "Go Brrrr" in _text(posted)
    assert posted.pings.everyone is False


async def test_setup_rejects_bad_time_and_zone(world: World) -> None:
    for options, words in (
        ({"time": "25:00"}, "not a time of day"),
        ({"timezone": "Mars/Olympus"}, "not an IANA time zone"),
    ):
        handle = await world.slash(world.owner, "admin setup", channel=world.quests, **options)
        assert words in (await handle.original()).content


async def test_moderator_role_counts_and_xp_revoke_clamps_at_zero(world: World) -> None:
    await _setup(world)
    world.fake.set_command_permission(world.guild, "admin", world.mods, allow=True)
    learner = world.learner()
    grant = await world.slash(
        world.moderator, "admin xp", member=learner, amount=30, reason="great question in #help"
    )
    assert "+30 XP" in (await grant.original()).content
    revoke = await world.slash(
        world.moderator, "admin xp", member=learner, amount=-100, reason="duplicate grant"
    )
    text = (await revoke.original()).content
    assert "-30 XP" in text and "cannot go below 0" in text and "now 0" in text
    with sqlite3.connect(world.database) as db:
        actions = [row[0] for row in db.execute("SELECT action FROM audit_log")]
    assert "xp.grant" in actions and "xp.revoke" in actions


async def test_quest_add_preview_publish_and_disable(world: World) -> None:
    text = (REPO / "quests" / "go-brrrr.yaml").read_text()
    text = text.replace("id: go-brrrr", "id: go-brrrr-again", 1)
    text = text.replace("title: Go Brrrr", "title: Go Brrrr, again", 1)
    handle = await world.slash(world.owner, "admin quest-add", file=("again.yaml", text.encode()))
    preview = await handle.wait_for(lambda m: bool(m.components), timeout=10)
    assert "Publish this quest" in preview.content
    click = await world.fake.click_button(preview, _custom_id(preview, "Publish"))
    # the click is acknowledged at once (a deferred update); its answer then edits the preview
    published = await click.wait_for(lambda m: not m.components, timeout=10)
    assert "Published `go-brrrr-again`" in published.content
    shown = await world.slash(world.learner(), "quest", quest="go-brrrr-again")
    assert "Go Brrrr, again" in _text(await shown.original())
    disable = await world.slash(world.owner, "admin quest-disable", quest="go-brrrr-again")
    assert "no longer on this server's map" in (await disable.original()).content
    gone = await world.slash(world.learner(), "quest", quest="go-brrrr-again")
    assert "There is no quest" in (await gone.original()).content


def _custom_id(message: Message, label: str) -> str:
    for row in message.components:
        for component in row["components"]:
            if component.get("label") == label:
                return component["custom_id"]
    raise AssertionError(f"no {label!r} button")


@pytest.mark.parametrize(
    ("yaml_text", "words"),
    [
        ("id: [unclosed\n", "again.yaml:2:1"),
        ("id: x\ntitle: t\nphase: nowhere\nsummary: s\nreadings: []\ntasks: []\n", "tasks"),
        (
            (REPO / "quests" / "go-brrrr.yaml")
            .read_text()
            .replace("title: Go Brrrr", "title: Go Brrrr @everyone", 1),
            "mention",
        ),
    ],
)
async def test_quest_add_reports_problems(world: World, yaml_text: str, words: str) -> None:
    handle = await world.slash(
        world.owner, "admin quest-add", file=("again.yaml", yaml_text.encode())
    )
    reply = await handle.original(timeout=10)
    assert "The quest has problems" in reply.content and words in reply.content
    assert not reply.pings.everyone


async def test_schedule_rejects_past_dates(world: World) -> None:
    past = await world.slash(world.owner, "admin schedule", quest="go-brrrr", date="2001-01-01")
    assert "is in the past" in (await past.original()).content
    bad = await world.slash(world.owner, "admin schedule", quest="go-brrrr", date="tomorrow")
    assert "is not a date" in (await bad.original()).content
    ok = await world.slash(world.owner, "admin schedule", quest="go-brrrr", date="2099-01-01")
    assert "will be the quest of 2099-01-01" in (await ok.original()).content


async def test_export_gives_two_csv_files(world: World) -> None:
    """The leaderboard and the ledger; the leaderboard leaves out a member who hid themselves
    with /privacy hide (Moderating a server, Your data)."""
    learner, hiding = world.learner(), world.learner()
    for member in (learner, hiding):
        done = await world.slash(member, "done", task="go-brrrr/matrix-drill")
        await done.original()
    hidden = await (await world.slash(hiding, "privacy hide")).original()
    assert hidden.ephemeral and "hidden" in hidden.content
    handle = await world.slash(world.owner, "admin export")
    reply = await handle.wait_for(lambda m: bool(m.attachments), timeout=10)
    files = {a.filename: a.data.decode() for a in reply.attachments}
    assert set(files) == {"leaderboard.csv", "xp_ledger.csv"}
    board = list(csv.DictReader(io.StringIO(files["leaderboard.csv"])))
    names = [row["display_name"] for row in board]
    assert learner.username in names and hiding.username not in names, names


#: display names a member can choose, each a formula once the export is opened in a spreadsheet
FORMULA_NAMES = [
    '=HYPERLINK("http://evil","x")',
    "+1+1",
    "-2+3",
    "@SUM(1,1)",
    "\t=1+1",
    "\r=1+1",
]


async def test_export_makes_formula_names_inert_and_keeps_numbers(world: World) -> None:
    members = []
    for n, name in enumerate(FORMULA_NAMES):
        user = world.fake.add_user(f"formula{n}")
        world.fake.add_member(world.guild, user, nick=name)
        members.append(user)
    print(f"ATTACK: members named {FORMULA_NAMES!r}")
    for user in members:
        await (await world.slash(user, "done", task="go-brrrr/matrix-drill")).original()
    reason = "=cmd|' /C calc'!A0"
    await (
        await world.slash(world.owner, "admin xp", member=members[0], amount=-5, reason=reason)
    ).original()
    handle = await world.slash(world.owner, "admin export")
    reply = await handle.wait_for(lambda m: bool(m.attachments), timeout=10)
    files = {a.filename: a.data.decode() for a in reply.attachments}
    board = list(csv.DictReader(io.StringIO(files["leaderboard.csv"], newline="")))
    ledger = list(csv.DictReader(io.StringIO(files["xp_ledger.csv"], newline="")))
    names = {int(row["user_id"]): row["display_name"] for row in board}
    print("exported names:", [names[user.id] for user in members])
    assert [names[user.id] for user in members] == ["'" + name for name in FORMULA_NAMES]
    assert all(int(row["xp"]) > 0 for row in board if int(row["user_id"]) in names)
    (revoke,) = [
        row for row in ledger if int(row["user_id"]) == members[0].id and row["source"] == "admin"
    ]
    print("the revoke's row:", revoke)
    assert (revoke["amount"], int(revoke["amount"])) == ("-5", -5)  # a number, unprefixed
    assert revoke["reason"] == "'" + reason
    assert revoke["display_name"] == "'" + FORMULA_NAMES[0]


async def test_post_leaderboard_has_a_chart(world: World) -> None:
    await _setup(world)
    handle = await world.slash(world.owner, "admin post-leaderboard")
    assert "Posted week" in (await handle.original(timeout=15)).content
    posted = await world.fake.wait_for_message(
        world.quests, lambda m: any(a.filename == "week.png" for a in m.attachments), timeout=10
    )
    assert posted.attachments[0].data.startswith(b"\x89PNG")


async def test_an_unexpected_failure_answers_with_a_logged_reference(world: World) -> None:
    with sqlite3.connect(world.database) as db:  # a storage fault the bot does not expect
        db.execute("ALTER TABLE audit_log RENAME TO audit_log_away")
    try:
        handle = await world.slash(
            world.owner, "admin xp", member=world.learner(), amount=5, reason="fault injection"
        )
        reply = await handle.wait_for(lambda m: "went wrong" in m.content, timeout=10)
    finally:
        with sqlite3.connect(world.database) as db:
            db.execute("ALTER TABLE audit_log_away RENAME TO audit_log")
    assert reply.ephemeral
    ref = reply.content.split("(ref ")[1].split(")")[0]
    assert len(ref) == 6
    await world.bot.wait_for_output(f"(ref {ref})")  # the same reference is in the log


#: a quest a moderator writes: its build task reuses a shipped grader with that grader's interface
ADDED_QUEST = """\
id: matmul-again
title: Matmul, once more
phase: foundations
summary: The same three matrix multiplies, in a quest a moderator wrote.
readings:
  - ref: brrr-intro
    note: The operator-fusion section again.
tasks:
  - id: three-ways
    title: Three ways, again
    kind: build
    xp: 45
    grader: matmul_three_ways
    interface:
      - matmul_loops(A, B) -> Tensor
      - matmul_dot(A, B) -> Tensor
      - matmul_columns(A, B) -> Tensor
    prompt: Write `matmul_loops`, `matmul_dot` and `matmul_columns` once more.
"""


def _task_ledger(world: World, user: User) -> list[tuple[str, int, str | None]]:
    """The XP ledger rows of ``user``: (source, amount, reference), oldest first."""
    with closing(sqlite3.connect(world.database)) as db:
        return db.execute(
            "SELECT xp_ledger.source, xp_ledger.amount, xp_ledger.reference FROM xp_ledger "
            "JOIN members ON members.id = xp_ledger.member_id WHERE members.user_id = ? "
            "ORDER BY xp_ledger.id",
            (user.id,),
        ).fetchall()


async def _publish(world: World, text: str) -> None:
    handle = await world.slash(world.owner, "admin quest-add", file=("added.yaml", text.encode()))
    preview = await handle.wait_for(lambda m: bool(m.components), timeout=10)
    click = await world.fake.click_button(preview, _custom_id(preview, "Publish"))
    assert "Published" in (await click.wait_for(lambda m: not m.components, timeout=10)).content


async def test_an_added_quests_build_task_is_graded_and_regraded(world: World) -> None:
    await _setup(world)  # publishing needs the server's settings row
    await _publish(world, ADDED_QUEST)
    learner = world.learner()
    handle = await world.submit(
        learner, (SOLUTIONS / "correct.py").read_bytes(), task="matmul-again/three-ways"
    )
    verdict = await handle.wait_for(lambda m: m.content.startswith(("Passed", "Error")), 60)
    assert verdict.content.startswith("Passed") and "+45 XP" in verdict.content, verdict.content
    assert "Three ways, again" in verdict.content
    assert _task_ledger(world, learner) == [("task", 45, "matmul-again/three-ways")]
    number = int(verdict.content.split("Submission #")[1].split(" ")[0])

    again = await world.slash(world.owner, "admin regrade", submission=number)
    assert "queued for grading again" in (await again.original()).content
    dm = await world.fake.wait_for_dm(
        learner, lambda m: m.content.startswith(("Passed", "Error")), 60
    )
    assert dm.content.startswith("Passed") and "No new XP" in dm.content, dm.content
    assert _task_ledger(world, learner) == [("task", 45, "matmul-again/three-ways")]  # not twice

    off = await world.slash(world.owner, "admin quest-disable", quest="matmul-again")
    assert "no longer on this server's map" in (await off.original()).content
    gone = await world.slash(world.owner, "admin regrade", submission=number)
    reply = (await gone.original()).content
    assert f"Submission #{number} is for `matmul-again/three-ways`, which is no longer" in reply


async def test_quest_add_refuses_an_interface_its_grader_does_not_call(world: World) -> None:
    text = ADDED_QUEST.replace("      - matmul_columns(A, B) -> Tensor\n", "")
    line = text.splitlines().index("    interface:") + 1
    handle = await world.slash(world.owner, "admin quest-add", file=("added.yaml", text.encode()))
    reply = await handle.original(timeout=10)
    assert not reply.components  # nothing to publish
    assert (
        f"• added.yaml:{line}: interface names matmul_loops, matmul_dot but grader "
        "`matmul_three_ways` calls matmul_loops, matmul_dot, matmul_columns"
    ) in reply.content, reply.content


async def test_similar_lists_a_copied_solution_for_moderators_only(world: World) -> None:
    """Two members pass with the same code: the later one is listed against the earlier, with
    both members and the score; neither verdict says a word of it."""
    await _setup(world)
    first, second = world.learner(), world.learner()
    verdicts = []
    for learner in (first, second):
        handle = await world.submit(learner)
        verdict = await handle.wait_for(lambda m: m.content.startswith(("Passed", "Error")), 60)
        assert verdict.content.startswith("Passed"), verdict.content
        verdicts.append(verdict.content)
    assert not any("copy" in v.lower() or "similar" in v.lower() for v in verdicts)

    choices = await world.fake.invoke_autocomplete(
        world.guild, world.quests, world.owner, "admin similar", focused="task", value="go"
    )
    assert [c["value"] for c in choices] == [BUILD_TASK]

    reply = await (await world.slash(world.owner, "admin similar", task=BUILD_TASK)).original()
    assert reply.ephemeral
    line = next(x for x in reply.content.splitlines() if f"<@{second.id}>" in x)
    assert "**100%**" in line and line.index(f"<@{second.id}>") < line.index(f"<@{first.id}>")
    assert "near-copy pair" in reply.content and "newest first" in reply.content

    gone = await world.slash(world.owner, "admin similar", task="go-brrrr/no-such-task")
    assert (await gone.original()).content == (
        "There is no task `go-brrrr/no-such-task` in this server's map. "
        "Pick one from the list as you type, or see `/quests`."
    )
    quiz = await world.slash(world.owner, "admin similar", task="go-brrrr/shape-predictions")
    assert (await quiz.original()).content == (
        "`go-brrrr/shape-predictions` is a quiz task: only build tasks' code is compared. "
        "Pick a build task from the list as you type."
    )
