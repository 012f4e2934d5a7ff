"""Log lines for people (``LOG_FORMAT=text``) or for log collectors (``json``).

The json format writes one object per line, so a collector never has to guess where a
multi-line message or traceback ends.  Which submission, job or server a line is about
travels in a context variable (``log_context``): code deep in a call chain logs as usual
and its lines still carry the ids, including in tasks and threads started inside the
context (both copy it).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from types import MappingProxyType, TracebackType
from typing import Literal, TextIO

LogFormat = Literal["text", "json"]

#: the text format, as it always was
TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
#: ids a record can carry (from ``log_context`` or a call's ``extra``), in JSON key order
CONTEXT_KEYS = ("submission_id", "job_id", "guild_id", "ref")

_ids: contextvars.ContextVar[Mapping[str, int]] = contextvars.ContextVar(
    "log_ids", default=MappingProxyType({})
)


@contextlib.contextmanager
def log_context(
    *, submission_id: int | None = None, job_id: int | None = None, guild_id: int | None = None
) -> Iterator[None]:
    """Within the block, every record names these ids (None keeps what an outer block set);
    the outer ids come back afterwards."""
    token = _ids.set(_merged(submission_id=submission_id, job_id=job_id, guild_id=guild_id))
    try:
        yield
    finally:
        _ids.reset(token)


def bind_context(*, guild_id: int | None = None) -> None:
    """Name ``guild_id`` on every record for the rest of the current asyncio task: for hooks
    that run at the start of a task and have no end to restore at (a task's context is its
    own copy, so nothing leaks out of it)."""
    _ids.set(_merged(guild_id=guild_id))


def _merged(**ids: int | None) -> dict[str, int]:
    return {**_ids.get(), **{key: value for key, value in ids.items() if value is not None}}


class ContextFilter(logging.Filter):
    """Copies the current context's ids onto each record; an id given in a call's ``extra``
    wins, being more specific."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _ids.get().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line; it never raises, whatever a record holds
    (a bad format string or an unprintable argument still gives a line)."""

    def format(self, record: logging.LogRecord) -> str:
        try:
            return json.dumps(self._entry(record), default=_text)
        except Exception as exc:  # a broken record must not cost the line
            return json.dumps(
                {
                    "time": _iso_time(record),
                    "level": str(getattr(record, "levelname", "ERROR")),
                    "logger": str(getattr(record, "name", "?")),
                    "message": f"unloggable record ({type(exc).__name__}: {_text(exc)})",
                }
            )

    def _entry(self, record: logging.LogRecord) -> dict[str, object]:
        entry: dict[str, object] = {
            "time": _iso_time(record),
            "level": record.levelname,
            "logger": record.name,
            "message": _message(record),
        }
        for key in CONTEXT_KEYS:
            value = getattr(record, key, None)
            if value is not None:
                entry[key] = value
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc_info"] = record.exc_text
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        return entry


def _iso_time(record: logging.LogRecord) -> str:
    stamp = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception as exc:  # e.g. log.info("%d", "x"): show what was given instead
        return f"{_text(record.msg)} % {_text(record.args)} (not formatted: {_text(exc)})"


def _text(value: object) -> str:
    """``str(value)``, or its type's name when even that fails."""
    try:
        return str(value)
    except Exception:
        return f"<unprintable {type(value).__name__}>"


def make_handler(log_format: LogFormat, stream: TextIO) -> logging.Handler:
    """A handler writing ``stream`` in ``log_format``, with the context's ids on records."""
    handler = logging.StreamHandler(stream)
    json_lines = log_format == "json"
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(ContextFilter())
    return handler


def configure(level: str, log_format: LogFormat) -> None:
    """Log to stderr at ``level`` in ``log_format``.  With json, Python's warnings and an
    uncaught exception become records too, so stderr holds JSON lines only."""
    logging.basicConfig(level=level, handlers=[make_handler(log_format, sys.stderr)])
    if level != "DEBUG":
        logging.getLogger("alembic").setLevel(logging.WARNING)
    if log_format == "json":
        logging.captureWarnings(True)
        sys.excepthook = _log_uncaught


def _log_uncaught(
    kind: type[BaseException], error: BaseException, trace: TracebackType | None
) -> None:
    logging.getLogger("bot").critical("uncaught exception", exc_info=(kind, error, trace))
