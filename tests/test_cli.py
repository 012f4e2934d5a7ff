"""The command line as a user meets it: help, exit codes and one-line errors."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sqlite3
import subprocess
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.types import utcnow
from bot.progress.awards import award_verdict
from tests.support import GUILD_ID, REPO, SEED_QUESTS, add_member, run_cli

COMMANDS = [
    [],
    ["run"],
    ["worker"],
    ["grade"],
    ["quests"],
    ["quests", "check"],
    ["db"],
    ["db", "upgrade"],
    ["db", "current"],
    ["db", "verify"],
    ["db", "backfill-fingerprints"],
    ["db", "worker-role"],
    ["db", "backup"],
    ["db", "restore"],
]


def torch_has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "brrrbot")
def test_help_on_each_command(command: list[str], tmp_path: Path) -> None:
    result = run_cli(*command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: brrrbot")


def test_console_script_is_python_dash_m_bot() -> None:
    script = shutil.which("brrrbot", path=str(Path(__import__("sys").executable).parent))
    assert script is not None, "the brrrbot console script is not installed"
    result = subprocess.run([script, "--help"], capture_output=True, text=True, check=False)
    assert result.returncode == 0
    assert result.stdout == run_cli("--help", cwd=REPO).stdout


def _assert_one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("brrrbot: error: ")
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0]


def test_db_upgrade_creates_and_migrates_the_default_sqlite(tmp_path: Path) -> None:
    assert "no schema yet" in run_cli("db", "current", cwd=tmp_path).stdout
    result = run_cli("db", "upgrade", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    database = tmp_path / "data" / "brrrbot.sqlite3"
    with sqlite3.connect(database) as connection:
        (revision,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    assert revision in result.stdout
    current = run_cli("db", "current", cwd=tmp_path)
    assert current.stdout.strip() == f"{revision} (head)"


def test_db_verify_is_clean_then_names_a_corrupted_total(tmp_path: Path) -> None:
    database = tmp_path / "data" / "brrrbot.sqlite3"
    assert run_cli("db", "upgrade", cwd=tmp_path).returncode == 0
    asyncio.run(_pay_a_build(f"sqlite+aiosqlite:///{database}"))
    clean = run_cli("db", "verify", cwd=tmp_path)
    assert (clean.returncode, clean.stdout) == (0, "database is consistent\n"), clean.stderr
    with contextlib.closing(sqlite3.connect(database)) as db, db:
        db.execute("UPDATE member_xp SET xp = 999 WHERE period_kind = 'all'")
    result = run_cli("db", "verify", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    named = "totals: member 1 (user 10 in guild 1): all-time total is 999 XP but the ledger sums"
    assert f"{named} to 60 XP" in result.stdout.splitlines(), result.stdout
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().endswith("problem(s) in the database")


def test_db_backfill_fingerprints_needs_the_newest_schema_then_reports(tmp_path: Path) -> None:
    refused = run_cli("db", "backfill-fingerprints", cwd=tmp_path)
    _assert_one_line_error(refused, "database is empty", "run brrrbot db upgrade first")
    assert run_cli("db", "upgrade", cwd=tmp_path).returncode == 0
    result = run_cli("db", "backfill-fingerprints", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("fingerprinted 0 of 0 passes without fingerprints"), result
    assert result.stdout.rstrip().endswith("0 near-copy pairs flagged")


async def _pay_a_build(url: str) -> None:
    """Member 1 passes the build task (60 XP), through the real award code."""
    engine = make_engine(url)
    try:
        async with make_sessionmaker(engine)() as session, session.begin():
            await add_member(session)
            await award_verdict(
                session,
                guild_id=GUILD_ID,
                member_id=1,
                task_ref="go-brrrr/matmul-three-ways",
                task_xp=60,
                status="passed",
                score=1.0,
                submission_id=None,
                tz=ZoneInfo("UTC"),
                now=utcnow(),
            )
    finally:
        await engine.dispose()


def test_database_url_from_dotenv(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("DATABASE_URL=sqlite+aiosqlite:///./elsewhere/x.db\n")
    assert run_cli("db", "upgrade", "--create-dir", cwd=tmp_path).returncode == 0
    assert (tmp_path / "elsewhere" / "x.db").is_file()


def test_db_upgrade_refuses_a_missing_directory_unless_told(tmp_path: Path) -> None:
    """A mistyped path must not migrate a new, empty database beside the real one."""
    url = f"sqlite+aiosqlite:///{tmp_path}/dtaa/x.db"
    result = run_cli("db", "upgrade", cwd=tmp_path, env={"DATABASE_URL": url})
    missing = f"{tmp_path}/dtaa does not exist"
    _assert_one_line_error(result, "DATABASE_URL", missing, "--create-dir")
    assert not (tmp_path / "dtaa").exists()
    created = run_cli("db", "upgrade", "--create-dir", cwd=tmp_path, env={"DATABASE_URL": url})
    assert created.returncode == 0, created.stderr
    assert (tmp_path / "dtaa" / "x.db").is_file()


def test_unwritable_data_directory(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where a directory should be")
    url = f"sqlite+aiosqlite:///{tmp_path}/blocker/data/x.db"
    result = run_cli("db", "upgrade", "--create-dir", cwd=tmp_path, env={"DATABASE_URL": url})
    _assert_one_line_error(result, "DATABASE_URL", "not a directory")


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("mysql://localhost/db", ["DATABASE_URL", "sqlite+aiosqlite://"]),
        ("not a url", ["DATABASE_URL"]),
        ("postgresql+asyncpg://u:hunter2@127.0.0.1:9/db", ["cannot open the database"]),
    ],
)
def test_unopenable_database_url(url: str, words: list[str], tmp_path: Path) -> None:
    result = run_cli("db", "upgrade", cwd=tmp_path, env={"DATABASE_URL": url})
    if result.returncode == 2 and "asyncpg driver" in result.stderr:
        words = ["asyncpg"]  # the postgres extra is not installed: also one clear line
    _assert_one_line_error(result, *words)
    assert "hunter2" not in result.stderr


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"WORKERS": "many"}, "WORKERS"),
        ({"WORKERS": "-1"}, "WORKERS"),
        ({"LOG_LEVEL": "chatty"}, "LOG_LEVEL"),
        ({"MAX_PY_BYTES": "12"}, "MAX_PY_BYTES"),
        ({"WORKER_DEVICE": "tpu"}, "WORKER_DEVICE"),
        ({"WEB_PORT": "70000"}, "WEB_PORT"),
        ({"WEB_BASE_URL": "javascript:alert(1)"}, "WEB_BASE_URL"),
        ({"WEB_BASE_URL": "https://brrr.example.org/?page=1"}, "WEB_BASE_URL"),
        ({"WEB_BASE_URL": "https://example.org/brrrbot"}, "WEB_BASE_URL"),
    ],
)
def test_invalid_setting_names_the_variable(env: dict[str, str], variable: str, tmp_path: Path):
    _assert_one_line_error(run_cli("db", "current", cwd=tmp_path, env=env), variable)


@pytest.mark.skipif(torch_has_cuda(), reason="this host has a CUDA GPU")
def test_a_cuda_only_worker_refuses_a_host_without_a_gpu(tmp_path: Path) -> None:
    env = {"WORKER_DEVICE": "cuda", "QUESTS_DIR": str(SEED_QUESTS)}
    result = run_cli("worker", cwd=tmp_path, env=env)
    _assert_one_line_error(result, "WORKER_DEVICE=cuda", "no usable CUDA GPU")
    check = run_cli("worker", "--check", cwd=tmp_path, env=env)  # says what the worker would
    assert check.returncode == 1, check.stdout
    assert check.stdout.splitlines()[-1] == (
        "device: WORKER_DEVICE=cuda but this host has no usable CUDA GPU: FAIL"
    )


@pytest.mark.parametrize("count", ["-1", "0", "65", "two"])
def test_worker_count_out_of_bounds_is_one_line(count: str, tmp_path: Path) -> None:
    result = run_cli("worker", "--count", count, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("brrrbot worker: error: argument --count: ")
    )


def test_invalid_setting_in_dotenv(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("WORKERS=lots\n")
    _assert_one_line_error(run_cli("quests", "check", str(SEED_QUESTS), cwd=tmp_path), "WORKERS")


def test_run_without_token(tmp_path: Path) -> None:
    result = run_cli("run", cwd=tmp_path, env={"QUESTS_DIR": str(SEED_QUESTS)})
    _assert_one_line_error(result, "DISCORD_TOKEN", "developer portal")


def test_run_with_broken_content_lists_each_problem(tmp_path: Path) -> None:
    quests = tmp_path / "quests"
    shutil.copytree(SEED_QUESTS, quests)
    (quests / "map.yaml").write_text("phases: [\n")
    result = run_cli("run", cwd=tmp_path, env={"DISCORD_TOKEN": "x", "HTTP_PORT": "0"})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "map.yaml:" in result.stderr
    assert not (tmp_path / "data").exists(), "nothing is created before the input is valid"


def test_run_migrates_then_reports_unreachable_discord(tmp_path: Path) -> None:
    # No network here: the bot gets as far as logging in, after migrating the database.
    env = {"DISCORD_TOKEN": "not-a-real-token", "QUESTS_DIR": str(SEED_QUESTS), "HTTP_PORT": "0"}
    result = run_cli("run", "--no-workers", cwd=tmp_path, env=env, timeout=120)
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    # without a network Discord cannot be reached (1); with one, it refuses the token (2)
    if result.returncode == 1:
        assert last.startswith("brrrbot: error: cannot reach Discord: "), result.stderr
    else:
        assert (result.returncode, last) == (
            2,
            "brrrbot: error: DISCORD_TOKEN was rejected by Discord; reset the token in the "
            "developer portal (Applications > your app > Bot) and update .env",
        ), result.stderr
    with sqlite3.connect(tmp_path / "data" / "brrrbot.sqlite3") as connection:
        (revision,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    assert revision == migrate.head_revision()


def test_quests_check_seed_is_clean(tmp_path: Path) -> None:
    result = run_cli("quests", "check", str(SEED_QUESTS), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_quests_check_reports_file_line_and_exit_1(tmp_path: Path) -> None:
    quests = tmp_path / "quests"
    shutil.copytree(SEED_QUESTS, quests)
    quest = quests / "go-brrrr.yaml"
    text = quest.read_text()
    assert "xp: 60" in text
    quest.write_text(text.replace("xp: 60", "xp: 0", 1))
    line = text[: text.index("xp: 60")].count("\n") + 1
    result = run_cli("quests", "check", cwd=tmp_path)  # QUESTS_DIR default: ./quests
    assert result.returncode == 1
    assert f"go-brrrr.yaml:{line}: " in result.stdout
    assert "xp" in result.stdout


def test_quests_check_holds_interfaces_to_their_graders(tmp_path: Path) -> None:
    quests = tmp_path / "quests"
    shutil.copytree(SEED_QUESTS, quests)
    quest = quests / "go-brrrr.yaml"
    text = quest.read_text()
    grader = "    grader: matmul_three_ways\n"
    assert text.count(grader) == 1 and "interface:" not in text  # the grader's is taken
    stated = "    interface:\n" + "".join(
        f"      - {name}(A, B) -> Tensor\n"
        for name in ("matmul_loops", "matmul_dots", "matmul_columns")
    )
    quest.write_text(text.replace(grader, grader + stated))
    line = text[: text.index(grader)].count("\n") + 2
    result = run_cli("quests", "check", cwd=tmp_path)
    assert result.returncode == 1
    assert f"go-brrrr.yaml:{line}: interface names matmul_loops, matmul_dots" in result.stdout
    assert "grader `matmul_three_ways` calls matmul_loops, matmul_dot, matmul_columns" in (
        result.stdout
    )


def test_cli_startup_imports_neither_torch_nor_discord() -> None:
    code = (
        "import sys, bot.cli, bot.config, bot.db.lifecycle, bot.content; "
        "bad = {'torch', 'discord'} & set(sys.modules); assert not bad, bad"
    )
    result = subprocess.run(
        [__import__("sys").executable, "-c", code], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0, result.stderr


def test_an_empty_brrrbot_env_file_reads_no_dotenv(tmp_path: Path) -> None:
    # The local pool runs in the bot's directory with BRRRBOT_ENV_FILE="": the bot's .env
    # (and the DISCORD_TOKEN in it) must not be read there.
    (tmp_path / ".env").write_text("LOG_LEVEL=LOUD\n")
    read = run_cli("quests", "check", str(SEED_QUESTS), cwd=tmp_path)
    assert read.returncode == 2 and "LOG_LEVEL" in read.stderr  # .env is read by default
    ignored = run_cli(
        "quests", "check", str(SEED_QUESTS), cwd=tmp_path, env={"BRRRBOT_ENV_FILE": ""}
    )
    assert ignored.returncode == 0, ignored.stderr
