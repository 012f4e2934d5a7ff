"""Errors that end a command with one clear line and a non-zero exit code, no traceback."""


class UserError(Exception):
    """A problem the user can fix; ``str(exc)`` is the whole message."""

    exit_code = 2


class ConfigError(UserError):
    """A missing or invalid setting."""


class DatabaseError(UserError):
    """The database cannot be opened, created or migrated."""


class ServiceUnavailable(UserError):
    """Something outside the user's input is down (Discord unreachable)."""

    exit_code = 1
