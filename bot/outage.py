"""Is this error the database being away (down, restarting, locked), rather than a bug?

One answer for the background loops (``bot.background``: one warning per outage, not a
traceback per retry), the members' replies (``bot.exts.error_replies``: "nothing was saved")
and the runner (``bot.runner``: a database error is never reported as Discord's).

The database is away when the chain of an exception
(``orig``, ``__cause__``; not ``__context__``) holds one of:

* SQLAlchemy's ``OperationalError``/``InterfaceError`` or a ``DBAPIError`` whose connection
  was invalidated (a dead pooled connection, a lock held past SQLite's busy timeout);
* one of asyncpg's connection errors (``PostgresConnectionError``, an administrator's
  shutdown or a server that cannot accept connections now, a connection that no longer
  exists, ``InterfaceError``);
* SQLite's ``OperationalError`` ("database is locked", "unable to open database file");
* a raw ``OSError`` (asyncpg's refused connect is a bare ``ConnectionRefusedError``) raised
  inside a database driver or SQLAlchemy: an ``OSError`` raised elsewhere (aiohttp's, when
  Discord cannot be reached) is not the database's.
"""

from __future__ import annotations

import sqlite3
import traceback

from sqlalchemy import exc as sa_exc

try:
    import asyncpg
except ImportError:  # pragma: no cover - asyncpg is a dependency; SQLite-only installs may lack it
    asyncpg = None

#: modules whose frames make a raw OSError the database's
_DRIVER_MODULES = ("asyncpg", "aiosqlite", "sqlalchemy", "sqlite3")
#: what a member is told: nothing was saved
UNAVAILABLE_REPLY = (
    "The bot's database is unavailable right now; nothing was saved. Try again in a minute."
)


def _asyncpg_unavailable(exc: BaseException) -> bool:
    if asyncpg is None:
        return False
    errors = asyncpg.exceptions
    return isinstance(
        exc,
        errors.PostgresConnectionError
        | errors.OperatorInterventionError  # admin shutdown, cannot connect now
        | errors.InterfaceError  # "connection is closed"
        | errors.ConnectionDoesNotExistError,
    )


def _raised_in_driver(exc: BaseException) -> bool:
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        module = frame.f_globals.get("__name__", "")
        if module.split(".", 1)[0] in _DRIVER_MODULES:
            return True
    return False


def _one(exc: BaseException) -> bool:
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError):
        # SQLite says "no such table" or "disk is full" this way too: its text decides
        return not isinstance(exc.orig, sqlite3.OperationalError) or _one(exc.orig)
    if isinstance(exc, sa_exc.TimeoutError):  # the pool had no connection to give in time
        return True
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return "locked" in text or "busy" in text or "unable to open" in text
    if _asyncpg_unavailable(exc):
        return True
    return isinstance(exc, OSError) and _raised_in_driver(exc)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or any(current is s for s in seen) or len(seen) >= 20:
            continue
        seen.append(current)
        # not ``__context__``: a bug met while handling a database error is still a bug
        todo += [getattr(current, "orig", None), current.__cause__]
    return seen


def is_database_unavailable(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) says the database cannot be reached or used now."""
    return any(_one(link) for link in _chain(exc))


def describe(exc: BaseException) -> str:
    """One short line for the log: the innermost database error's type and text."""
    for link in _chain(exc):
        if _one(link):
            exc = link
            break
    text = str(getattr(exc, "orig", None) or exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
