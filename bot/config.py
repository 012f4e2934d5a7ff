"""Typed settings from the environment and an optional ``.env`` file.

Every setting has one environment variable (the table in docs/operators/configuration.md lists
them).  A missing or invalid setting becomes a ``ConfigError`` whose message
names the variable and says how to fix it; the CLI prints it on one line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, get_args

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.errors import ConfigError
from bot.logs import LogFormat

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./data/brrrbot.sqlite3"

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
DeviceChoice = Literal["auto", "cpu", "cuda"]

#: how to fix each setting, shown after a validation error
FIX_HINTS: dict[str, str] = {
    "DISCORD_TOKEN": "copy the bot token from the Discord developer portal "
    "(Applications > your app > Bot > Reset Token) into .env as DISCORD_TOKEN=...",
    "DATABASE_URL": f"use e.g. {DEFAULT_DATABASE_URL} or postgresql+asyncpg://user:pass@host/db",
    "QUESTS_DIR": "point it at a directory holding library.yaml, map.yaml and the quest files, "
    "or unset it to use the shipped quests",
    "LOG_LEVEL": "use one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
    "LOG_FORMAT": "use text (lines for people) or json (one JSON object per line)",
    "WORKERS": "use a whole number from 0 (no local workers) to 64",
    "MAX_PY_BYTES": "use a size in bytes between 1 KiB and 10 MiB, e.g. 262144",
    "MAX_NOTEBOOK_BYTES": "use a size in bytes between 1 KiB and 10 MiB, e.g. 2097152",
    "SUBMISSIONS_PER_HOUR": "use a whole number from 1 to 1000",
    "LEASE_SECONDS": "use a whole number of seconds from 2 to 600, e.g. 30",
    "WORKER_DEVICE": "use auto (a GPU when one is usable), cpu or cuda",
    "HTTP_HOST": "use an address of this machine, e.g. 127.0.0.1 or 0.0.0.0 (all interfaces)",
    "HTTP_PORT": "use a port number from 1 to 65535, or 0 to turn the HTTP server off",
    "BRRRBOT_URL": "use the bot's HTTP address, e.g. https://brrrbot.example.org",
    "WEB_HOST": "use an address of this machine, e.g. 127.0.0.1 (behind a reverse proxy)",
    "WEB_PORT": "use a port number from 1 to 65535, or 0 to serve no web pages",
    "WEB_BASE_URL": "use the pages' public address, the root of a host name, e.g. "
    "https://brrrbot.example.org",
    "BRRRBOT_TOKEN": "run /token new in your server and copy the token it shows",
}


class Settings(BaseSettings):
    """All runtime configuration; field names map to upper-case variables."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        case_sensitive=False,
        extra="ignore",
    )

    # Secrets are SecretStr: never shown in a repr, a log line or an error message, and
    # each is revealed only where it is used (``get_secret_value``).  A database URL may
    # carry a password in its user part or its query string, so the whole URL is one.
    discord_token: SecretStr | None = None
    database_url: SecretStr = SecretStr(DEFAULT_DATABASE_URL)
    quests_dir: Path | None = None  # unset: ./quests if it is one, else the shipped quests
    log_level: LogLevel = "INFO"
    log_format: LogFormat = "text"
    workers: int = Field(default=1, ge=0, le=64)
    max_py_bytes: int = Field(default=256 * 1024, ge=1024, le=10 * 1024 * 1024)
    max_notebook_bytes: int = Field(default=2 * 1024 * 1024, ge=1024, le=10 * 1024 * 1024)
    submissions_per_hour: int = Field(default=20, ge=1, le=1000)
    lease_seconds: int = Field(default=30, ge=2, le=600)
    worker_device: DeviceChoice = "auto"
    http_host: str = Field(default="127.0.0.1", min_length=1)
    http_port: int = Field(default=8080, ge=0, le=65535)  # 0: no HTTP server
    # the public pages of servers that opt in (``/admin setup web:true``): a listener of their
    # own, so publishing them never publishes /metrics, /healthz or the API; 0: no pages
    web_host: str = Field(default="127.0.0.1", min_length=1)
    web_port: int = Field(default=0, ge=0, le=65535)
    # where the pages are reached from outside (the reverse proxy's address); links from
    # Discord need it, and without it none are shown
    web_base_url: str | None = None
    # ``brrrbot submit``: the bot's HTTP address and the member's token from /token new
    brrrbot_url: str | None = None
    brrrbot_token: SecretStr | None = None

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("log_format", mode="before")
    @classmethod
    def _lower_format(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("worker_device", mode="before")
    @classmethod
    def _lower_device(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("quests_dir", mode="before")
    @classmethod
    def _blank_dir_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("web_base_url")
    @classmethod
    def _web_address(cls, value: str | None) -> str | None:
        if value is None:
            return None
        cleaned = value.strip().rstrip("/")
        scheme, _, rest = cleaned.partition("://")
        if scheme not in {"http", "https"} or not rest or any(c in rest for c in '/?#" \\<>'):
            # the pages link from their host's root (/g/..., /static/...): no path, no query
            raise ValueError("it must be an http:// or https:// host with no path or query")
        return cleaned

    @field_validator("discord_token", "brrrbot_token", "brrrbot_url", "web_base_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("database_url")
    @classmethod
    def _known_driver(cls, value: SecretStr) -> SecretStr:
        url = value.get_secret_value()
        scheme = url.split("://", 1)[0] if "://" in url else ""
        if scheme not in {"sqlite+aiosqlite", "postgresql+asyncpg"}:
            shown = f" {scheme!r}" if scheme else ""
            raise ValueError(
                f"unsupported database URL scheme{shown}: it must be "
                "sqlite+aiosqlite:// or postgresql+asyncpg://"
            )
        return value

    def require_token(self) -> str:
        """The token, or a ConfigError for commands that talk to Discord."""
        if self.discord_token is None:
            raise ConfigError(f"DISCORD_TOKEN is not set: {FIX_HINTS['DISCORD_TOKEN']}")
        return self.discord_token.get_secret_value()


#: names the settings file commands read (default ``.env``; empty: none).  ``brrrbot run``
#: sets it empty for its local pool, which gets its settings explicitly: a DISCORD_TOKEN kept
#: in ``.env`` then never reaches a worker.
ENV_FILE_VARIABLE = "BRRRBOT_ENV_FILE"


def settings_file() -> str | None:
    """The settings file this process reads, per ``BRRRBOT_ENV_FILE``."""
    return os.environ.get(ENV_FILE_VARIABLE, ".env") or None


def load_settings(env_file: str | Path | None = ".env") -> Settings:
    """Read settings, turning pydantic's error tree into one readable line."""
    try:
        return Settings(_env_file=env_file)  # type: ignore[call-arg]
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None


def _secret_variables() -> frozenset[str]:
    """The variables of every setting typed as secret (a ``SecretStr``, optional or not)."""
    return frozenset(
        name.upper()
        for name, info in Settings.model_fields.items()
        if SecretStr in (info.annotation, *get_args(info.annotation))
    )


SECRET_VARIABLES = _secret_variables()


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        variable = str(error["loc"][0]).upper() if error["loc"] else "settings"
        message = error["msg"].removeprefix("Value error, ")
        got = error.get("input")
        secret = variable in SECRET_VARIABLES
        shown = f" (got {got!r})" if isinstance(got, str | int) and not secret else ""
        hint = FIX_HINTS.get(variable, "")
        parts.append(f"{variable}: {message}{shown}" + (f"; {hint}" if hint else ""))
    return "invalid setting " + " | ".join(parts)
