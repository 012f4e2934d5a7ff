"""Discord's error responses: HTTP status, JSON error code and, for bad forms, an error tree.

discord.py turns these into ``HTTPException``/``Forbidden``/``NotFound`` with
``.code`` and a flattened ``.text``, so the bot sees exactly what Discord sends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Path = Sequence[str | int]


class ApiError(Exception):
    def __init__(
        self, status: int, code: int, message: str, errors: dict[str, Any] | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.errors = errors

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.errors:
            body["errors"] = self.errors
        return body


@dataclass
class FormErrors:
    """Collects field problems into Discord's nested ``{"a": {"0": {"_errors": [...]}}}`` tree."""

    tree: dict[str, Any] = field(default_factory=dict)

    def add(self, path: Path, code: str, message: str) -> None:
        node = self.tree
        for part in path:
            node = node.setdefault(str(part), {})
        node.setdefault("_errors", []).append({"code": code, "message": message})

    def too_long(self, path: Path, limit: int) -> None:
        self.add(path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")

    def too_short(self, path: Path, limit: int) -> None:
        self.add(path, "BASE_TYPE_MIN_LENGTH", f"Must be {limit} or more in length.")

    def raise_if_any(self) -> None:
        if self.tree:
            raise ApiError(400, 50035, "Invalid Form Body", self.tree)


def unauthorized() -> ApiError:
    return ApiError(401, 0, "401: Unauthorized")


def unknown(what: str) -> ApiError:
    """404 for a missing object; the codes are Discord's (Unknown Channel, Unknown Message...)."""
    codes = {
        "Guild": 10004,
        "Channel": 10003,
        "Member": 10007,
        "Message": 10008,
        "Role": 10011,
        "User": 10013,
        "Webhook": 10015,
        "interaction": 10062,
    }
    return ApiError(404, codes[what], f"Unknown {what}")


def missing_access() -> ApiError:
    return ApiError(403, 50001, "Missing Access")


def missing_permissions() -> ApiError:
    return ApiError(403, 50013, "Missing Permissions")


def wrong_channel_type() -> ApiError:
    return ApiError(400, 50024, "Cannot execute action on this channel type")


def thread_exists() -> ApiError:
    return ApiError(400, 160004, "A thread has already been created for this message")


def cannot_dm() -> ApiError:
    return ApiError(403, 50007, "Cannot send messages to this user")


def empty_message() -> ApiError:
    return ApiError(400, 50006, "Cannot send an empty message")


def not_author() -> ApiError:
    return ApiError(403, 50005, "Cannot edit a message authored by another user")


def already_acknowledged() -> ApiError:
    return ApiError(400, 40060, "Interaction has already been acknowledged.")


def invalid_webhook_token() -> ApiError:
    return ApiError(401, 50027, "Invalid Webhook Token")


def too_large() -> ApiError:
    return ApiError(413, 40005, "Request entity too large")


def invalid_json() -> ApiError:
    return ApiError(400, 50109, "The request body contains invalid JSON.")


def invalid_form(path: Path, code: str, message: str) -> ApiError:
    errors = FormErrors()
    errors.add(path, code, message)
    return ApiError(400, 50035, "Invalid Form Body", errors.tree)
