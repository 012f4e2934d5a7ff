"""A record of every HTTP request the bot made, so tests can count them.

"Posted exactly once" and "retried after the 429" are assertions on this log.
"""

from __future__ import annotations

from dataclasses import dataclass
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

    @property
    def key(self) -> str:
        """``"POST /channels/{channel_id}/messages"``: what fault injection matches on."""
        return f"{self.method} {self.route}"


class Journal:
    def __init__(self) -> None:
        self.records: list[RequestRecord] = []

    def add(self, record: RequestRecord) -> None:
        self.records.append(record)

    def matching(self, key: str, status: int | None = None) -> list[RequestRecord]:
        return [r for r in self.records if r.key == key and (status is None or r.status == status)]
