"""What the docs promise in numbers and tables, held to what the code does.

Each test reads a page's own words (a table, a default, a permission integer) and checks it
against the running code, so a page cannot keep a number the code left behind.  The register
of every claim the docs make and what checks it is ``docs/contributors/claims.md``; the last
tests here keep that register from naming tests that no longer exist.
"""

from __future__ import annotations

import ast
import asyncio
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support import REPO, SEED_QUESTS

DOCS = REPO / "docs"


def _table(page: Path, header: str) -> list[list[str]]:
    """The rows of the Markdown table on ``page`` whose header row starts with ``header``."""
    lines = page.read_text().splitlines()
    for number, line in enumerate(lines):
        if line.startswith(f"| {header} |"):
            rows = []
            for row in lines[number + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([cell.strip() for cell in row.strip().strip("|").split(" | ")])
            return rows
    raise AssertionError(f"{page.relative_to(REPO)}: no table headed {header!r}")


# --- docs/operators/configuration.md -------------------------------------------------------

CONFIGURATION = DOCS / "operators" / "configuration.md"


def _settings_rows() -> dict[str, tuple[str, str]]:
    """Each documented variable: (its default cell, its meaning cell)."""
    rows = _table(CONFIGURATION, "Variable")
    found = {}
    for variable, default, meaning in rows:
        name = re.fullmatch(r"`([A-Z_]+)`", variable)
        assert name, variable
        found[name[1]] = (default, meaning)
    return found


@pytest.fixture
def no_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No setting in the environment, and no .env in the working directory."""
    for variable in _settings_rows():
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.mark.usefixtures("no_settings")
def test_every_documented_default_is_the_default() -> None:
    """The table's default column, read as an operator reads it: a value in backticks is what
    an unset variable means, "(none" is no value at all."""
    from bot.config import load_settings, settings_file

    settings = load_settings(None)
    checked = 0
    for variable, (default, _) in _settings_rows().items():
        if variable == "BRRRBOT_ENV_FILE":  # read before the settings, by settings_file()
            assert re.match(r"`\.env`", default), default
            assert settings_file() == ".env"
            checked += 1
            continue
        value = getattr(settings, variable.lower())
        if hasattr(value, "get_secret_value"):
            value = value.get_secret_value()
        if default.startswith("(none"):
            assert value is None, variable
        elif literal := re.fullmatch(r"`([^`]+)`(?: \(.*\))?", default):
            assert str(value) == literal[1], f"{variable}: documented {literal[1]}, is {value}"
        else:  # prose (QUESTS_DIR): tests/test_content_location.py checks what it says
            continue
        checked += 1
    assert checked >= 15, "the table was read"


def test_the_documented_sizes_are_the_bytes_they_name() -> None:
    """`262144` (256 KiB) and `2097152` (2 MiB): the number and its reading agree."""
    rows = _settings_rows()
    assert rows["MAX_PY_BYTES"][0] == "`262144` (256 KiB)" and 262144 == 256 * 1024
    assert rows["MAX_NOTEBOOK_BYTES"][0] == "`2097152` (2 MiB)" and 2097152 == 2 * 1024 * 1024


@pytest.mark.usefixtures("no_settings")
@pytest.mark.parametrize("variable", ["WORKERS", "LEASE_SECONDS", "HTTP_PORT"])
def test_every_documented_range_is_the_range_accepted(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ranges "(0 to 64)", "(2 to 600)", "(1 to 65535)": both ends accepted, one past either
    is refused naming the variable (HTTP_PORT's 0 is documented apart: it turns the server
    off)."""
    from bot.config import load_settings
    from bot.errors import ConfigError

    _, meaning = _settings_rows()[variable]
    found = re.search(r"\((\d+) to (\d+)", meaning)
    assert found, f"{variable}: no range in {meaning!r}"
    low, high = int(found[1]), int(found[2])
    accepted = [low, high]
    refused = [high + 1]
    if "`0` turns" in meaning:
        assert low == 1
        accepted.append(0)
    else:
        refused.append(low - 1)
    for value in accepted:
        monkeypatch.setenv(variable, str(value))
        assert getattr(load_settings(None), variable.lower()) == value
    for value in refused:
        monkeypatch.setenv(variable, str(value))
        with pytest.raises(ConfigError, match=f"^invalid setting {variable}: "):
            load_settings(None)


# --- docs/learners/quest-map.md ------------------------------------------------------------

QUEST_MAP = DOCS / "learners" / "quest-map.md"


def test_the_quest_map_page_is_the_shipped_map() -> None:
    """Every row of the page's table against the shipped content: the order the daily post
    walks, each quest's phase, prerequisite, days and XP, and its tasks' kinds and XP in
    order."""
    from bot.content import load_content

    content = load_content(SEED_QUESTS)
    rows = _table(QUEST_MAP, "Phase")
    assert [re.search(r"`([a-z0-9-]+)`$", row[1])[1] for row in rows] == [  # type: ignore[index]
        quest.id for quest in content.quests
    ], "the rows follow the map's order"
    for (phase, quest_cell, prerequisite, days, xp, tasks), quest in zip(
        rows, content.quests, strict=True
    ):
        title = quest_cell.rsplit(" `", 1)[0]
        assert quest.title.startswith(title), (quest.title, title)
        assert content.phase_of(quest.id).title.startswith(phase), (quest.id, phase)
        assert prerequisite == ("none" if quest.prerequisite is None else f"`{quest.prerequisite}`")
        assert int(days) == quest.days, quest.id
        listed = [(kind, int(points)) for kind, points in re.findall(r"\((\w+), (\d+)\)", tasks)]
        assert listed == [(task.kind, task.xp) for task in quest.tasks], quest.id
        assert int(xp) == sum(points for _, points in listed), f"{quest.id}: the XP column"


# --- docs/operators/discord-application.md -------------------------------------------------

APPLICATION = DOCS / "operators" / "discord-application.md"


def test_the_invite_permission_integer_is_the_named_permissions() -> None:
    """The page names eight permissions and one integer, in prose and in the invite URL: the
    integer is those permissions' bits, as discord.py numbers them, and no other."""
    import discord

    text = " ".join(APPLICATION.read_text().split())
    named = re.search(r"bot permissions (.+?) \(permission integer `(\d+)`\)", text)
    assert named, "the permissions sentence"
    names = [name.strip() for name in re.split(r", | and ", named[1])]
    assert len(names) == 8, names
    attribute = {name: name.lower().replace(" ", "_") for name in names}
    attribute["View Channels"] = "view_channel"
    permissions = discord.Permissions(**dict.fromkeys(attribute.values(), True))
    assert permissions.value == int(named[2])
    assert f"permissions={named[2]}`" in text, "the invite URL carries the same integer"


def test_the_bot_asks_for_no_privileged_intent() -> None:
    """The page's "The bot needs no privileged intents": members, presences and message
    content are the three Discord makes an application ask for."""
    from bot.app import BrrrBot
    from bot.background import Doorbell

    async def intents() -> object:
        bot = BrrrBot(SimpleNamespace(verdicts=Doorbell()))  # type: ignore[arg-type]
        try:
            return bot.intents
        finally:
            await bot.close()

    found = asyncio.run(intents())
    assert "no privileged intents" in APPLICATION.read_text()
    assert not (found.members or found.presences or found.message_content), found  # type: ignore[attr-defined]


# --- docs/operators/operations.md ----------------------------------------------------------


def test_the_docker_healthcheck_rides_out_a_reconnect_as_documented() -> None:
    """Operations' "the Docker healthcheck's three retries 30 s apart": the image's HEALTHCHECK."""
    (line,) = [
        line
        for line in (REPO / "Dockerfile").read_text().splitlines()
        if line.startswith("HEALTHCHECK")
    ]
    words = shlex.split(line.rstrip(" \\"))
    options = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    assert (options["--interval"], options["--retries"]) == ("30s", "3")
    page = " ".join((DOCS / "operators" / "operations.md").read_text().split())
    assert "three retries 30 s apart" in page


# --- numbers the pages state, and the code's constants they describe -----------------------


def _interval(name: str) -> float:
    """The value of the code constant ``module.NAME`` (or ``module.NAME.attribute``)."""
    import importlib

    module, _, rest = name.partition(":")
    value: object = importlib.import_module(module)
    for part in rest.split("."):
        value = getattr(value, part)
    return float(value)  # type: ignore[arg-type]


#: (page, its words, the constant they describe, the number they say).  The behaviour behind
#: each is tested with the constant (the register names those tests); this keeps the number a
#: reader sees equal to it.
INTERVALS = [
    ("operators/workers.md", "in a heartbeat row every 10 s", "bot.db.presence:BEAT_S", 10),
    ("operators/workers.md", "in the last 30 s (three beats", "bot.db.presence:RECENT_S", 30),
    ("operators/operations.md", "heartbeat in the last 30 s", "bot.db.presence:RECENT_S", 30),
    ("operators/database.md", "beaten in the last 30 seconds", "bot.db.presence:RECENT_S", 30),
    (
        "operators/workers.md",
        "for 10 s after the database returns",
        "bot.worker.job_loop:RECLAIM_GRACE_S",
        10,
    ),
    (
        "operators/workers.md",
        "retries at most a second apart",
        "bot.worker.job_loop:DATABASE_RETRIES.max_delay_s",
        1,
    ),
    ("operators/workers.md", "after 1 s, doubling", "bot.background:RESTARTS.first_delay_s", 1),
    (
        "operators/workers.md",
        "doubling to 60 s while they keep dying",
        "bot.background:RESTARTS.max_delay_s",
        60,
    ),
    (
        "operators/workers.md",
        "quick again after a minute of health",
        "bot.background:HEALTHY_AFTER_S",
        60,
    ),
    (
        "contributors/architecture.md",
        "backs off (1 s doubling to 60 s)",
        "bot.background:PASS_RETRIES.max_delay_s",
        60,
    ),
    (
        "contributors/architecture.md",
        "a pass every 2 s covers",
        "bot.exts.delivery:SAFETY_NET_S",
        2,
    ),
    (
        "operators/operations.md",
        "retrying every 2 s in between",
        "bot.background:OUTAGE_RETRY_S",
        2,
    ),
    ("operators/operations.md", "answers within 2 s", "bot.http.health:DATABASE_TIMEOUT_S", 2),
    (
        "operators/operations.md",
        "answered this scrape within 2 s",
        "bot.metrics:DATABASE_TIMEOUT_S",
        2,
    ),
    ("operators/operations.md", "up to 4 s to finish", "bot.runner:DRAIN_S", 4),
    ("operators/operations.md", "ends 9 s after the signal", "bot.shutdown:DEADLINE_S", 9),
    ("operators/workers.md", "a 2-second poll covers", "bot.worker.wakeup:POSTGRES_POLL_S", 2),
    ("operators/workers.md", "a cheap read every 20\nms", "bot.worker.wakeup:SQLITE_POLL_S", 0.02),
    (
        "learners/speed-boards.md",
        "no trial runs past 30 s",
        "bot.worker.speed_trial:DEADLINE_S",
        30,
    ),
    ("contributors/speed-trials.md", "50 timed pairs", "bot.worker.speed_trial:PAIRS", 50),
    (
        "contributors/speed-trials.md",
        "at 1.5× the worker's measured peaks",
        "bot.worker.speed_trial:FLOOR_MARGIN",
        1.5,
    ),
    (
        "learners/speed-boards.md",
        "a call over 20× the reference's",
        "bot.worker.speed_trial:SLOWER_CAP",
        20,
    ),
]


@pytest.mark.parametrize(("page", "words", "constant", "number"), INTERVALS)
def test_a_number_a_page_states_is_the_codes(
    page: str, words: str, constant: str, number: float
) -> None:
    text = " ".join((DOCS / page).read_text().split())
    assert " ".join(words.split()) in text, f"{page} no longer says {words!r}"
    assert _interval(constant) == number, f"{page} says {number} for {constant}"


def test_the_documented_defaults_of_commands_are_theirs() -> None:
    """`/admin setup`'s "default 09:00 UTC" and "default Monday" (Moderating a server), and
    `brrrbot submit`'s "300 s by default" (Quests and grading in your terminal)."""
    from bot.cli import build_parser
    from bot.db.models import Guild

    moderation = " ".join((DOCS / "operators" / "moderation.md").read_text().split())
    assert "(default 09:00 UTC) and the weekly leaderboard (default Monday)" in moderation
    columns = Guild.__table__.c
    assert (columns.post_time.default.arg, columns.timezone.default.arg) == ("09:00", "UTC")
    assert columns.weekly_post_day.default.arg == 0  # Python's weekday(): Monday
    terminal = " ".join((DOCS / "learners" / "terminal.md").read_text().split())
    assert "(300 s by default, `--timeout S`)" in terminal
    args = build_parser().parse_args(["submit", "a.py", "--task", "go-brrrr/matmul-three-ways"])
    assert args.timeout == 300


# --- docs/learners/privacy.md: "nothing expires" --------------------------------------------

#: the tables that hold what Your data lists about a member, by their model's name
MEMBER_DATA = {
    "Submission",
    "GradingJob",
    "XpEntry",
    "SpeedRecord",
    "ApiToken",
    "Member",
    "SolutionFingerprint",
    "NearCopy",
}


def test_only_a_members_own_deletion_removes_their_data() -> None:
    """Your data's "It is all kept until it is deleted: nothing expires": no code of the bot
    deletes rows of a member's data but ``/privacy delete`` (``bot/progress/privacy.py``),
    neither through the ORM's ``delete(Model)`` nor in SQL."""
    deleting = []
    for path in sorted((REPO / "bot").rglob("*.py")):
        source = path.read_text()
        where = path.relative_to(REPO)
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "delete"
                and node.args
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in MEMBER_DATA
            ):
                deleting.append(f"{where}:{node.lineno}: delete({node.args[0].id})")
        for table in (
            "members",
            "submissions",
            "grading_jobs",
            "xp_ledger",
            "speed_results",
            "solution_fingerprints",
            "near_copies",
        ):
            if re.search(rf"DELETE\s+FROM\s+{table}\b", source, re.I):
                deleting.append(f"{where}: DELETE FROM {table}")
    assert deleting, "the scan finds the deletion /privacy delete makes"
    assert {line.split(":")[0] for line in deleting} == {"bot/progress/privacy.py"}, deleting


# --- README.md: the two backends ------------------------------------------------------------


def test_without_postgresql_its_variants_skip_saying_so_and_ci_fails_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README: every database test runs on both backends; the PostgreSQL runs "skip,
    saying so, where those are not installed", and ``.ci/run`` runs the README's test command
    "with BRRRBOT_REQUIRE_POSTGRES=1 so that a missing server fails the run"."""
    from tests import postgres_server

    assert postgres_server.BACKENDS == ("sqlite", "postgresql")

    def no_binaries() -> Path:
        raise postgres_server.Unavailable("initdb not found (apt-get install postgresql)")

    monkeypatch.setattr(postgres_server, "find_bindir", no_binaries)
    monkeypatch.delenv("BRRRBOT_REQUIRE_POSTGRES", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"apt-get install postgresql"):
        postgres_server.started_postgres()
    monkeypatch.setenv("BRRRBOT_REQUIRE_POSTGRES", "1")
    with pytest.raises(pytest.fail.Exception, match="BRRRBOT_REQUIRE_POSTGRES=1 but"):
        postgres_server.started_postgres()

    readme = (REPO / "README.md").read_text()
    command = re.search(r"^(python3 -m venv \.venv && .*pytest)$", readme, re.M)
    assert command, "the README's test command"
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert "export BRRRBOT_REQUIRE_POSTGRES=1" in [line.split("  #")[0].strip() for line in ci]
    assert ci[-1] == command[1]


# --- the register: docs/contributors/claims.md ---------------------------------------------

REGISTER = DOCS / "contributors" / "claims.md"
NODE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
MEASURED = re.compile(r"measured: `([^`]+)`")


def _register() -> list[tuple[str, str, str]]:
    """(page link, claim, checked by) for each row of the register's table."""
    rows = _table(REGISTER, "Page")
    assert all(len(row) == 3 for row in rows), [row for row in rows if len(row) != 3]
    return [(row[0], row[1], row[2]) for row in rows]


def _module_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def test_every_test_the_register_names_exists() -> None:
    """Each node id in the register is a test function of a test file: a test renamed or
    deleted fails here, not in the reader's trust."""
    missing, named = [], 0
    functions: dict[str, set[str]] = {}
    for _, claim, checked in _register():
        for path, name in NODE.findall(checked):
            named += 1
            file = REPO / path
            if not file.is_file():
                missing.append(f"{path} (no such file), for: {claim}")
                continue
            if path not in functions:
                functions[path] = _module_functions(file)
            if not name.startswith("test_") or name not in functions[path]:
                missing.append(f"{path}::{name}, for: {claim}")
    assert named > 100, "the register was read"
    assert not missing, "\n".join(missing)


def test_every_row_is_tested_measured_or_reworded() -> None:
    """A row names the tests that check its claim, or says "measured:" with the command of a
    bench that exists, or "reworded" (the page now says only what holds without a test)."""
    unchecked = []
    for page, claim, checked in _register():
        if NODE.search(checked) or checked.startswith("reworded"):
            continue
        command = MEASURED.search(checked)
        if command is None:
            unchecked.append(f"{page}: {claim}: {checked!r}")
            continue
        words = command[1].split()
        module = words[words.index("-m") + 1] if "-m" in words else None
        script = REPO / (module.replace(".", "/") + ".py") if module else None
        script = script or next(REPO / w for w in words if w.startswith("bench/"))
        if not script.is_file() and not script.with_suffix("").joinpath("__main__.py").is_file():
            unchecked.append(f"{page}: {claim}: no bench {script.relative_to(REPO)}")
    assert not unchecked, "\n".join(unchecked)


def test_every_page_with_claims_is_in_the_register() -> None:
    """Each hand-written page is listed, so a new page's claims are not forgotten."""
    links = [re.search(r"\]\(([^)]+)\)", page) for page, _, _ in _register()]
    listed = {
        str((REGISTER.parent / link[1]).resolve().relative_to(DOCS)) for link in links if link
    }
    pages = {
        str(page.relative_to(DOCS))
        for page in DOCS.rglob("*.md")
        if page != REGISTER and "hooks" not in page.parts
    }
    assert pages - listed == set(), "pages with no row in the register"
