"""A record of every HTTP request the bot made, so tests can count them.

"Posted exactly once" and "retried after the 429" are assertions on this log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RequestRecord:
    method: str
    #: the route template, e.g. ``/channels/{channel_id}/messages``
    route: str
    path: str
    status: int
    #: fake-clock time the response was sent
    at: float
    #: the JSON payload (``payload_json`` for uploads), when there was one
    payload: Any = None
    #: the route's parameters, e.g. ``{"guild_id": "1", "user_id": "2", "role_id": "3"}``
    params: dict[str, str] = field(default_factory=dict)
    #: the ``X-Audit-Log-Reason`` header, decoded (what the server's audit log shows)
    reason: str | None = None

    @property
    def key(self) -> str:
        """``"POST /channels/{channel_id}/messages"``: what fault injection matches on."""
        return f"{self.method} {self.route}"


@dataclass(frozen=True)
class RoleWrite:
    """One request to give (``added``) or take a member's role, and Discord's answer."""

    added: bool
    guild_id: int
    user_id: int
    role_id: int
    #: 204 done (or nothing to do), 403/404 refused, 429 rate-limited (discord.py retries)
    status: int
    reason: str | None


class Journal:
    def __init__(self) -> None:
        self.records: list[RequestRecord] = []

    def add(self, record: RequestRecord) -> None:
        self.records.append(record)

    def matching(self, key: str, status: int | None = None) -> list[RequestRecord]:
        return [r for r in self.records if r.key == key and (status is None or r.status == status)]

    def role_writes(self, member_role_route: str) -> list[RoleWrite]:
        """Every PUT/DELETE to ``member_role_route``, oldest first."""
        return [
            RoleWrite(
                added=r.method == "PUT",
                guild_id=int(r.params["guild_id"]),
                user_id=int(r.params["user_id"]),
                role_id=int(r.params["role_id"]),
                status=r.status,
                reason=r.reason,
            )
            for r in self.records
            if r.route == member_role_route and r.method in ("PUT", "DELETE")
        ]
