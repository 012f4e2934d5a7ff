"""``brrrbot grade`` forks its zygote from the CLI (one torch import) only when the CLI holds
no secret, and a job in a forked zygote cannot read the environment the CLI started with."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Settings
from bot.grading.local import may_fork
from tests.support import SEED_QUESTS, run_cli

TASK = "go-brrrr/matmul-three-ways"
MARKER = "brrrbot-test-secret-7f3a9"

#: a submission that reports, in the error it raises at import, its own command line and
#: whether the marker is in its environment block or os.environ (read straight from memory,
#: since /proc/self/environ is closed to it)
ATTACK = f'''
import ctypes
import os

with open("/proc/self/stat", "rb") as stat:
    fields = stat.read().rsplit(b")", 1)[1].split()
arg_start, arg_end, env_start, env_end = (int(f) for f in fields[45:49])
argv = ctypes.string_at(arg_start, arg_end - arg_start).replace(b"\\0", b" ").decode()
block = ctypes.string_at(env_start, env_end - env_start)
found = b"{MARKER}" in block or any("{MARKER}" in v for v in os.environ.values())
print("ATTACK-RAN", flush=True)
raise RuntimeError(f"argv=[{{argv}}] environ-bytes={{len(block)}} found={{found}}")
'''


def _attack(tmp_path: Path, **env: str) -> str:
    (tmp_path / "attack.py").write_text(ATTACK)
    result = run_cli(
        "grade",
        "attack.py",
        "--task",
        TASK,
        cwd=tmp_path,
        env={"QUESTS_DIR": str(SEED_QUESTS), "LEAKED": MARKER, **env},
    )
    assert result.returncode == 1, result.stderr
    assert "RuntimeError: argv=[" in result.stdout, result.stdout  # the attack ran
    return result.stdout


def test_a_job_in_a_forked_zygote_cannot_read_the_cli_environment(tmp_path: Path) -> None:
    out = _attack(tmp_path)
    assert "argv=[brrrbot sandbox zygote (forked)" in out
    assert "found=False" in out and "environ-bytes=0 " not in out


def test_a_cli_holding_a_token_starts_the_zygote_by_exec(tmp_path: Path) -> None:
    out = _attack(tmp_path, DISCORD_TOKEN=MARKER)
    assert "bot.sandbox.zygote" in out and " grade attack.py" not in out
    assert "found=False" in out


@pytest.mark.parametrize(
    ("changes", "forks"),
    [
        ({}, True),
        ({"discord_token": "abc"}, False),
        ({"database_url": "postgresql+asyncpg://u:pw@db/brrrbot"}, False),
        ({"database_url": "postgresql+asyncpg://u@db/brrrbot"}, True),
    ],
)
def test_may_fork_only_without_secrets(changes: dict[str, str], forks: bool) -> None:
    assert may_fork(Settings(_env_file=None, **changes)) is forks  # type: ignore[arg-type]
