"""The Dockerfile and the compose files stay consistent with the project.

Pure file parsing (no Docker engine needed): stages and their commands, the install lines
against the README's Quick start, compose services against the Dockerfile's targets, and
every variable compose sets against the settings in bot/config.py.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import build_parser
from bot.config import Settings

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("bot", "worker")
SQLITE_IN_VOLUME = "sqlite+aiosqlite:////app/data/brrrbot.sqlite3"
DATA_DIR = "/app/data"
# what .env would hold for the PostgreSQL override (its required variables)
POSTGRES_ENV = {"POSTGRES_PASSWORD": "owner-pw", "WORKER_DB_PASSWORD": "worker-pw"}


# --- Dockerfile -------------------------------------------------------------------------


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    result = []
    for line in logical:
        keyword, _, rest = line.partition(" ")
        result.append((keyword.upper(), rest.strip()))
    return result


def _stages() -> dict[str, list[tuple[str, str]]]:
    """Stage name -> its instructions (after FROM), in file order."""
    stages: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for keyword, rest in _instructions((ROOT / "Dockerfile").read_text()):
        if keyword == "FROM":
            match = re.fullmatch(r"(\S+)\s+AS\s+(\S+)", rest, re.IGNORECASE)
            assert match, f"every stage is named: FROM {rest}"
            current = stages.setdefault(match.group(2), [("BASE", match.group(1))])
        elif current is not None:
            current.append((keyword, rest))
    return stages


def _chain(stage: str) -> list[tuple[str, str]]:
    """A stage's instructions with those of the stages it builds on, base first."""
    stages = _stages()
    own = stages[stage]
    parent = own[0][1]
    return (_chain(parent) if parent in stages else []) + own[1:]


def _exec_form(rest: str) -> list[str]:
    assert rest.startswith("["), f"use the exec (JSON) form: {rest}"
    return [part.strip().strip('"') for part in rest.strip("[]").split(",")]


def _pip_installs(stage: str) -> list[list[str]]:
    """The argument lists of every `pip install` the stage's RUN lines contain."""
    found = []
    for keyword, rest in _chain(stage):
        if keyword == "RUN":
            for command in rest.split("&&"):
                words = shlex.split(command)
                if len(words) >= 2 and words[0].endswith("pip") and words[1] == "install":
                    found.append(words[2:])
    return found


def _editable_extras(args: list[str]) -> set[str]:
    """The extras of the `-e ".[...]"` install among ``args``."""
    assert "-e" in args, f"install the project editable, as the README does: {args}"
    target = args[args.index("-e") + 1]
    match = re.fullmatch(r"\.\[([a-z0-9_,-]+)\]", target)
    assert match, f'install form -e ".[extras]" expected, got {target!r}'
    return set(match.group(1).split(","))


def _arg_defaults(stage: str) -> dict[str, str]:
    return dict(
        rest.split("=", 1) for keyword, rest in _chain(stage) if keyword == "ARG" and "=" in rest
    )


def _env(stage: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for keyword, rest in _chain(stage):
        if keyword == "ENV":
            values.update(dict(pair.split("=", 1) for pair in shlex.split(rest)))
    return values


def _readme_installs() -> list[str]:
    quick_start = (ROOT / "README.md").read_text().split("## Quick start", 1)[1]
    block = quick_start.split("```sh", 1)[1].split("```", 1)[0]
    return re.findall(r"pip install ([^&\n]+)", block)


def test_both_targets_exist() -> None:
    stages = _stages()
    for target in TARGETS:
        assert target in stages, f"Dockerfile has no `AS {target}` stage"


@pytest.mark.parametrize("target", TARGETS)
def test_target_runs_as_a_fixed_non_root_user_before_its_command(target: str) -> None:
    keywords = [keyword for keyword, _ in _chain(target)]
    users = [rest for keyword, rest in _chain(target) if keyword == "USER"]
    assert users, f"{target}: no USER"
    assert "CMD" in keywords, f"{target}: no CMD"
    last_user = max(i for i, k in enumerate(keywords) if k == "USER")
    assert last_user < keywords.index("CMD"), f"{target}: USER must come before CMD"
    uid = users[-1].split(":")[0]
    assert uid.isdigit(), f"{target}: use a numeric uid (USER {users[-1]})"
    assert int(uid) >= 1000, f"{target}: runs as uid {uid}, not an unprivileged user"


def test_commands_are_real_cli_commands() -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    expected = {"bot": ["brrrbot", "run"], "worker": ["brrrbot", "worker"]}
    for target in TARGETS:
        command = _exec_form(next(rest for k, rest in _chain(target) if k == "CMD"))
        assert command[:2] == expected[target], f"{target}: CMD {command}"
        assert command[1] in commands
        build_parser().parse_args(command[1:])  # the arguments parse
    assert "--no-workers" in _exec_form(next(r for k, r in _chain("bot") if k == "CMD")), (
        "the bot image has no torch: its command must not start local workers"
    )


def _healthcheck_command() -> list[str]:
    checks = [rest for keyword, rest in _chain("bot") if keyword == "HEALTHCHECK"]
    assert len(checks) == 1, "the bot has one HEALTHCHECK"
    command = checks[0].partition("CMD ")[2]
    assert command.startswith("["), f"use the exec (JSON) form: {command}"
    return [str(part) for part in json.loads(command)]


@pytest.mark.parametrize(("answer", "exit_code"), [(200, 0), (503, 1)])
def test_healthcheck_asks_healthz_on_the_configured_port(answer: int, exit_code: int) -> None:
    """The image's check, run as Docker runs it, against a stand-in /healthz (200 or 503) on
    the port HTTP_PORT names; the bot listens on every interface of its container."""
    asked: list[str] = []

    class Healthz(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(answer)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    command = _healthcheck_command()
    assert command[:2] == ["python", "-c"], "the slim image has no curl: Python asks"
    with http.server.HTTPServer(("127.0.0.1", 0), Healthz) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        port = server.server_address[1]
        env = {"PATH": os.environ["PATH"], "HTTP_PORT": str(port)}
        result = subprocess.run(
            [sys.executable, *command[1:]], env=env, capture_output=True, timeout=60
        )
        server.shutdown()
    assert (result.returncode, asked) == (exit_code, ["/healthz"])
    assert _env("bot")["HTTP_HOST"] == "0.0.0.0" and "HTTP_HOST" in SETTINGS
    assert "'8080'" in command[2] and SETTINGS["HTTP_PORT"].default == 8080


def test_install_lines_match_the_readme_quick_start() -> None:
    readme = _readme_installs()
    assert readme, "README Quick start has pip install lines"
    for line in readme:  # the README's form is an editable install of the checkout's extras
        _editable_extras(shlex.split(line))
    pins = dict(word.split("==") for line in readme for word in shlex.split(line) if "==" in word)
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    expected = {"bot": {"postgres"}, "worker": {"worker", "postgres"}}
    for target in TARGETS:
        editable = [args for args in _pip_installs(target) if "-e" in args]
        assert len(editable) == 1, f"{target}: one editable install of the project"
        assert _editable_extras(editable[0]) == expected[target]
        assert expected[target] <= extras
    bot_words = [word for args in _pip_installs("bot") for word in args]
    assert not any(word.startswith("torch") for word in bot_words), "the bot image has no torch"
    torch_pin = _arg_defaults("worker").get("TORCH_VERSION")
    assert torch_pin == pins["torch"], "the worker's torch is the README's pinned release"
    for args in _pip_installs("worker"):
        assert any(word == "torch==${TORCH_VERSION}" for word in args), args


def test_images_copy_what_the_package_needs() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    for target in TARGETS:
        copied = set()
        for keyword, rest in _chain(target):
            if keyword == "COPY":
                *sources, _ = rest.split()
                for source in sources:
                    assert (ROOT / source).exists(), f"{target}: COPY {source}: no such path"
                    copied.add(source)
        assert packages <= copied, f"{target}: packages not copied: {packages - copied}"
        assert project["project"]["readme"] in copied, "setuptools reads the readme"
        quests = _env(target)["QUESTS_DIR"]
        assert quests == "/app/quests" and "quests" in copied, "the quests are baked in"
        assert any(k == "WORKDIR" and r == "/app" for k, r in _chain(target))
        assert ("VOLUME", f'["{DATA_DIR}"]') in _chain(target)


def test_dockerignore_keeps_secrets_and_local_state_out() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".env", ".venv", ".git", "data"} <= ignored


# --- compose ------------------------------------------------------------------------------


class _ComposeLoader(yaml.SafeLoader):
    """YAML as compose reads it: the merge tags !reset and !override are kept as markers."""


def _tagged(tag: str) -> Any:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.MappingNode):
            value: Any = loader.construct_mapping(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node)
        else:
            value = loader.construct_scalar(node)  # type: ignore[arg-type]
        return {tag: value}

    return construct


_ComposeLoader.add_constructor("!reset", _tagged("!reset"))
_ComposeLoader.add_constructor("!override", _tagged("!override"))


def _compose(name: str) -> dict[str, Any]:
    return yaml.load((ROOT / name).read_text(), Loader=_ComposeLoader)


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])((?:[^{}]|\{[^{}]*\})*))?\}")


def _interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default} (defaults may nest) and ${VAR:?message}."""

    def replace(match: re.Match[str]) -> str:
        name, operator, operand = match.group(1), match.group(2), match.group(3) or ""
        if env.get(name):
            return env[name]
        if operator == ":-":
            return _interpolate(operand, env)
        if operator == ":?":
            raise KeyError(f"{name} is required: {operand}")
        return ""

    previous = None
    while previous != value:
        previous, value = value, _VARIABLE.sub(replace, value)
    return value


def _environment(service: dict[str, Any]) -> dict[str, str]:
    raw = service.get("environment", {})
    if isinstance(raw, list):
        raw = dict(item.split("=", 1) for item in raw)
    return {key: str(value) for key, value in raw.items()}


SETTINGS = {name.upper(): field for name, field in Settings.model_fields.items()}


def test_compose_services_build_existing_targets() -> None:
    stages = _stages()
    services = _compose("docker-compose.yml")["services"]
    assert set(TARGETS) <= set(services)
    for name in TARGETS:
        build = services[name]["build"]
        assert build["context"] == "."
        assert build["target"] == name and name in stages


def test_every_variable_compose_sets_is_a_setting() -> None:
    for file in ("docker-compose.yml", "docker-compose.postgres.yml"):
        for name, service in _compose(file)["services"].items():
            if name not in TARGETS:
                continue  # e.g. postgres: its variables are the image's own
            for variable in _environment(service):
                assert variable in SETTINGS, f"{file}: {name} sets {variable}, not a setting"


def test_compose_defaults_are_the_settings_defaults() -> None:
    """`${VAR:-default}` in compose must not drift from bot/config.py."""
    services = _compose("docker-compose.yml")["services"]
    for name in TARGETS:
        for variable, value in _environment(services[name]).items():
            resolved = _interpolate(value, {})
            if variable == "DATABASE_URL":
                assert resolved == SQLITE_IN_VOLUME
                assert f"data:{DATA_DIR}" in services[name]["volumes"], "the file is on the volume"
            else:
                assert resolved == str(SETTINGS[variable].default), f"{name}: {variable}"
            Settings.model_validate({variable.lower(): resolved})  # a valid value


def test_worker_gets_no_secrets_of_the_bot() -> None:
    worker = _compose("docker-compose.yml")["services"]["worker"]
    assert "env_file" not in worker, "the worker must not read .env (the bot token is there)"
    assert "DISCORD_TOKEN" not in _environment(worker)
    assert _compose("docker-compose.yml")["services"]["bot"]["env_file"] == ".env"


def test_worker_has_the_gpu_and_the_sandbox_options() -> None:
    worker = _compose("docker-compose.yml")["services"]["worker"]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices)
    assert {"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"} <= set(
        worker["security_opt"]
    )
    assert worker["cap_drop"] == ["ALL"] and "cap_add" not in worker
    assert "privileged" not in worker and "user" not in worker  # the image's uid 10001
    assert worker["depends_on"]["bot"]["condition"] == "service_healthy", "bot migrates first"
    cpu = _compose("docker-compose.cpu.yml")["services"]["worker"]
    assert "!reset" in cpu["deploy"], "the CPU override removes the GPU reservation"


def test_postgres_override_switches_both_to_asyncpg() -> None:
    override = _compose("docker-compose.postgres.yml")
    postgres = override["services"]["postgres"]
    assert postgres["image"].startswith("postgres:16")
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    urls = {}
    for name in TARGETS:
        service = override["services"][name]
        urls[name] = _interpolate(_environment(service)["DATABASE_URL"], POSTGRES_ENV)
        assert urls[name].startswith("postgresql+asyncpg://"), urls[name]
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
        Settings.model_validate({"database_url": urls[name]})
    assert urls["bot"].split("@")[0] != urls["worker"].split("@")[0], (
        "the worker uses its own least-privilege role, not the owner account"
    )
    with pytest.raises(KeyError):  # a missing password stops compose, not the bot later
        _interpolate(_environment(override["services"]["bot"])["DATABASE_URL"], {})


PIP_WHEEL = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]


def test_the_wheel_installs_the_three_layers_and_nothing_of_development(tmp_path: Path) -> None:
    """A learner's ``pip install`` adds exactly these top-level names to their environment."""
    # from a copy of what git tracks: an in-tree build/ would leave stale modules in the wheel
    source = tmp_path / "source"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in tracked.stdout.decode().split("\0"):
        if name and (ROOT / name).exists() and not name.startswith(("tests/", "bench/")):
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            if (ROOT / name).is_symlink():
                (source / name).symlink_to(os.readlink(ROOT / name))
            else:
                shutil.copy2(ROOT / name, source / name)
    built = subprocess.run(
        [*PIP_WHEEL, "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("brrrbot-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"bot", "graders", "sandbox", "migrations"}
    assert "sandbox/zygote.py" in names and "graders/base.py" in names
    assert "bot/quests/map.yaml" in names  # the shipped quests, for `brrrbot grade` anywhere
