"""What a database outage looks like from here: the errors that mean "the database did not
answer", as opposed to a bug or a refused statement.

A restarted or stopped PostgreSQL surfaces as SQLAlchemy's ``DBAPIError`` family
(``OperationalError``, ``InterfaceError``: a connection dropped mid-statement), as asyncpg's
own exceptions, or, on a refused connect, as a raw ``OSError`` (``ConnectionRefusedError``)
from the driver; SQLite's write lock held past the busy timeout is an ``OperationalError``
("database is locked").  Whoever rides out an outage retries on exactly these and lets every
other exception through.
"""

from __future__ import annotations

from sqlalchemy import exc as sa_exc

_OUTAGE_TYPES: tuple[type[BaseException], ...] = (
    sa_exc.DBAPIError,  # OperationalError, InterfaceError, ...: the driver's error, wrapped
    sa_exc.DisconnectionError,
    sa_exc.TimeoutError,  # no connection from the pool in time
    OSError,  # ConnectionRefusedError and its kin, raised by the driver's connect
    TimeoutError,
)


def is_outage(error: BaseException) -> bool:
    """True when ``error`` says the database could not be reached or did not answer."""
    if isinstance(error, _OUTAGE_TYPES):
        return True
    return type(error).__module__.startswith("asyncpg")  # e.g. CannotConnectNowError
