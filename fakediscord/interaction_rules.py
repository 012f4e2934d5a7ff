"""Interactions the fake has sent and the rules for answering them.

Discord's rules: one initial response within 3 s (later: 10062 Unknown
interaction, and the token is dead); a second one is 40060; the response type
must suit the interaction type; after a response the token works for 15 min for
edits and follow-ups (then 401 50027). Times come from the fake clock.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from fakediscord import errors
from fakediscord.errors import ApiError

RESPONSE_DEADLINE = 3.0
TOKEN_LIFETIME = 15 * 60.0


class Kind(IntEnum):
    APPLICATION_COMMAND = 2
    MESSAGE_COMPONENT = 3
    AUTOCOMPLETE = 4
    MODAL_SUBMIT = 5


class Reply(IntEnum):
    CHANNEL_MESSAGE = 4
    DEFERRED_CHANNEL_MESSAGE = 5
    DEFERRED_UPDATE_MESSAGE = 6
    UPDATE_MESSAGE = 7
    AUTOCOMPLETE_RESULT = 8
    MODAL = 9


ALLOWED_REPLIES = {
    Kind.APPLICATION_COMMAND: {Reply.CHANNEL_MESSAGE, Reply.DEFERRED_CHANNEL_MESSAGE, Reply.MODAL},
    Kind.MESSAGE_COMPONENT: {
        Reply.CHANNEL_MESSAGE,
        Reply.DEFERRED_CHANNEL_MESSAGE,
        Reply.DEFERRED_UPDATE_MESSAGE,
        Reply.UPDATE_MESSAGE,
        Reply.MODAL,
    },
    Kind.AUTOCOMPLETE: {Reply.AUTOCOMPLETE_RESULT},
    Kind.MODAL_SUBMIT: {
        Reply.CHANNEL_MESSAGE,
        Reply.DEFERRED_CHANNEL_MESSAGE,
        Reply.DEFERRED_UPDATE_MESSAGE,
        Reply.UPDATE_MESSAGE,
    },
}


@dataclass
class InteractionRecord:
    id: int
    token: str
    kind: Kind
    guild_id: int | None
    channel_id: int
    user_id: int
    #: the INTERACTION_CREATE payload as dispatched
    payload: dict[str, Any]
    #: fake-clock time of dispatch; deadlines count from here
    created_at: float
    #: the message a component or modal came from
    source_message_id: int | None = None
    #: real monotonic time of dispatch and of the first accepted response
    dispatched_at: float = field(default_factory=time.monotonic)
    acked_at: float | None = None
    reply: Reply | None = None
    #: the deadline passed unanswered: the token is dead
    expired: bool = False
    original_id: int | None = None
    followup_ids: list[int] = field(default_factory=list)
    choices: list[dict[str, Any]] | None = None
    modal: dict[str, Any] | None = None
    #: every request about this interaction that Discord refused
    rejections: list[ApiError] = field(default_factory=list)

    def check_reply(self, reply: int, now: float) -> Reply:
        """Raises what Discord answers to a bad initial response; the type on success."""
        if self.reply is not None:
            raise errors.already_acknowledged()
        if self.expired or now - self.created_at > RESPONSE_DEADLINE:
            self.expired = True
            raise errors.unknown("interaction")
        try:
            chosen = Reply(reply)
        except ValueError:
            raise errors.invalid_form(
                ["type"], "BASE_TYPE_CHOICES", "Not a response type"
            ) from None
        if chosen not in ALLOWED_REPLIES[self.kind]:
            raise errors.invalid_form(
                ["type"], "INTERACTION_RESPONSE_TYPE_INVALID", "Invalid interaction response type"
            )
        return chosen

    def accept_reply(self, reply: Reply) -> None:
        self.reply = reply
        self.acked_at = time.monotonic()

    def check_token(self, now: float) -> None:
        """Webhook calls need an answered interaction whose token is under 15 minutes old."""
        if self.reply is None:
            raise errors.unknown("Webhook")
        if now - self.created_at > TOKEN_LIFETIME:
            raise errors.invalid_webhook_token()


class InteractionRegistry:
    def __init__(self) -> None:
        self._by_id: dict[int, InteractionRecord] = {}
        self._by_token: dict[str, InteractionRecord] = {}

    def add(self, record: InteractionRecord) -> None:
        self._by_id[record.id] = record
        self._by_token[record.token] = record

    def by_callback(self, interaction_id: str, token: str) -> InteractionRecord:
        record = self._by_id.get(int(interaction_id)) if interaction_id.isdigit() else None
        if record is None or record.token != token:
            raise errors.unknown("interaction")
        return record

    def by_token(self, token: str) -> InteractionRecord:
        record = self._by_token.get(token)
        if record is None:
            raise errors.unknown("Webhook")
        return record
