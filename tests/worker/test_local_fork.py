"""``brrrbot grade`` forks its zygote from the CLI (one torch import) even when the learner
has secrets set, and a job in that zygote finds none of them: not the environment's, not the
``.env`` file's, not any setting typed as secret.

The job searches all it can read (``tests.sandbox.memory_scan``) for each canary.  It must find
a random name that only the CLI's own memory holds (the directory of the file it grades), or
the scan would not show that the zygote came from the CLI; and it reports its command line,
which says whether it runs in a forked zygote.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.clean_start import held_names, is_plain
from bot.config import SECRET_VARIABLES, Settings
from tests.sandbox.memory_scan import scan_results, scanner_source
from tests.support import SEED_QUESTS, run_cli

TASK = "go-brrrr/matmul-three-ways"
FORKED_TITLE = "brrrbot sandbox zygote (forked)"
#: the job's findings reach the learner's terminal as the error its import raises
REPORT = (
    "import contextlib, io\n"
    "with open('/proc/self/cmdline', 'rb') as _f:\n"
    "    _argv = _f.read().replace(b'\\0', b' ').decode()\n"
    "_found = io.StringIO()\n"
    "with contextlib.redirect_stdout(_found):\n"
    "    scan()\n"
    "raise RuntimeError(f'ARGV {_argv}\\n{_found.getvalue()}')\n"
)


def canaries() -> dict[str, str]:
    """A canary for every secret setting, a database URL with a password in both places a
    URL can carry one, and a secret of the learner's that brrrbot knows nothing about."""
    tag = uuid.uuid4().hex
    values = {name: f"canary-{name.lower()}-{tag}" for name in SECRET_VARIABLES}
    values["DATABASE_URL"] = (
        f"postgresql+asyncpg://learner:canary-user-part-{tag}@db.example/brrrbot"
        f"?password=canary-query-{tag}"
    )
    values["MY_CLOUD_ACCESS"] = f"canary-unrelated-{tag}"
    return values


def _needles(values: dict[str, str]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for name, value in values.items():
        for part in value.replace("@", "?").replace(":", "?").replace("=", "?").split("?"):
            if part.startswith("canary-"):
                found[f"{name}:{part.split('-')[1]}"] = part.encode()
    return found


def _attack(tmp_path: Path, env: dict[str, str], dotenv: dict[str, str]) -> None:
    hidden = f"only-in-the-cli-{uuid.uuid4().hex}"
    folder = tmp_path / hidden
    folder.mkdir()
    secrets = _needles(env | dotenv)
    assert len(secrets) >= len(SECRET_VARIABLES) + 2
    source = scanner_source(secrets | {"control": hidden.encode()}, REPORT)
    (folder / "attack.py").write_text(source)
    (tmp_path / ".env").write_text("".join(f"{k}={v}\n" for k, v in dotenv.items()))
    print("ATTACK: the graded file scans its memory for the CLI's secrets", flush=True)
    result = run_cli(
        "grade",
        str(folder / "attack.py"),
        "--task",
        TASK,
        cwd=tmp_path,
        env={"QUESTS_DIR": str(SEED_QUESTS), **env},
    )
    assert result.returncode == 1, result.stderr  # graded, and failed: it raised
    assert f"ARGV {FORKED_TITLE}" in result.stdout, result.stdout[-3000:]  # the fast path
    report = scan_results(result.stdout)
    memory, objects = report["memory"], report["objects"]
    assert isinstance(memory, dict) and isinstance(objects, dict)
    assert memory["control"] >= 1 and objects["control"] >= 1, report  # the CLI's memory
    leaked = {name: (memory[name], objects[name]) for name in secrets}
    assert leaked == dict.fromkeys(secrets, (0, 0)), leaked


def test_no_secret_of_the_environment_reaches_a_job(tmp_path: Path) -> None:
    _attack(tmp_path, canaries(), {})


def test_no_secret_of_the_dotenv_file_reaches_a_job(tmp_path: Path) -> None:
    values = canaries()
    unrelated = {"MY_CLOUD_ACCESS": values.pop("MY_CLOUD_ACCESS")}
    _attack(tmp_path, unrelated, values)


def test_every_secret_setting_is_typed_secret_and_held_back() -> None:
    """The settings that hold secrets are SecretStr (never shown), the memory test above
    covers each of them, and none is a variable a clean start keeps."""
    assert {"DISCORD_TOKEN", "BRRRBOT_TOKEN", "DATABASE_URL"} <= SECRET_VARIABLES
    url = "postgresql+asyncpg://u:pw-canary@db/brrrbot?password=q-canary"
    settings = Settings(_env_file=None, database_url=url, brrrbot_token="t-canary")  # type: ignore[arg-type]
    assert isinstance(settings.database_url, SecretStr)
    assert "canary" not in repr(settings) and "canary" not in str(settings)
    assert not any(is_plain(name) for name in SECRET_VARIABLES)


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("PATH", True),
        ("PYTHONPATH", True),
        ("OMP_NUM_THREADS", True),
        ("LD_PRELOAD", True),
        ("LC_ALL", True),
        ("TORCH_HOME", True),
        ("TORCH_HUB_TOKEN", False),
        ("XDG_SESSION_ID", False),
        ("SSH_AUTH_SOCK", False),
        ("AWS_SECRET_ACCESS_KEY", False),
        ("QUESTS_DIR", False),
        ("LOG_LEVEL", False),
    ],
)
def test_a_clean_start_keeps_only_plain_variables(name: str, kept: bool) -> None:
    assert (held_names({name: "x"}) == []) is kept
