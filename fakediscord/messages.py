"""Stored messages and attachments, as the test sees them and as Discord sends them.

Tests read these objects directly (content, embeds, files' bytes, flags, what
was pinged); the bot gets them through ``payload()``, with the content fields
emptied where Discord withholds them from an app without the Message Content intent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fakediscord.entities import Thread, User
from fakediscord.pings import Pings

SUPPRESS_EMBEDS = 1 << 2
HAS_THREAD = 1 << 5
EPHEMERAL = 1 << 6
LOADING = 1 << 7
SUPPRESS_NOTIFICATIONS = 1 << 12
IS_COMPONENTS_V2 = 1 << 15

DEFAULT = 0
REPLY = 19
CHAT_INPUT_COMMAND = 20


@dataclass
class Attachment:
    id: int
    filename: str
    data: bytes
    url: str
    content_type: str | None = None
    description: str | None = None

    @property
    def size(self) -> int:
        return len(self.data)

    def payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "id": str(self.id),
            "filename": self.filename,
            "size": self.size,
            "url": self.url,
            "proxy_url": self.url,
        }
        if self.content_type is not None:
            payload["content_type"] = self.content_type
        if self.description is not None:
            payload["description"] = self.description
        return payload


@dataclass
class InteractionOrigin:
    """Which interaction a response message answers (``interaction_metadata``)."""

    id: int
    kind: int
    user: User
    name: str | None
    guild_id: int | None


@dataclass
class Message:
    id: int
    channel_id: int
    guild_id: int | None
    author: User
    timestamp: str
    content: str = ""
    embeds: list[dict[str, Any]] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    components: list[dict[str, Any]] = field(default_factory=list)
    flags: int = 0
    #: exactly as the bot sent it (None when it sent none)
    allowed_mentions: dict[str, Any] | None = None
    pings: Pings = field(default_factory=Pings)
    #: the users in ``pings.users``, for the payload's ``mentions``
    mentions: list[User] = field(default_factory=list)
    tts: bool = False
    kind: int = DEFAULT
    reference: dict[str, Any] | None = None
    nonce: str | None = None
    origin: InteractionOrigin | None = None
    edited_timestamp: str | None = None
    edits: int = 0
    deleted: bool = False
    #: the thread started from this message
    thread: Thread | None = None

    @property
    def ephemeral(self) -> bool:
        return bool(self.flags & EPHEMERAL)

    @property
    def loading(self) -> bool:
        """True while this is a deferred "Bot is thinking..." placeholder."""
        return bool(self.flags & LOADING)

    def withheld_from(self, reader: int | None) -> bool:
        """Whether Discord empties this message's content for app ``reader`` (None: an app with
        the Message Content intent). Its own messages, DMs and messages that ping it are exempt.
        """
        return (
            reader is not None
            and self.guild_id is not None
            and self.author.id != reader
            and reader not in self.pings.users
        )

    def payload(self, reader: int | None = None) -> dict[str, Any]:
        """The message as app ``reader`` receives it (see ``withheld_from``)."""
        withheld = self.withheld_from(reader)
        payload: dict[str, Any] = {
            "id": str(self.id),
            "channel_id": str(self.channel_id),
            "type": self.kind,
            "author": self.author.payload(),
            "content": "" if withheld else self.content,
            "timestamp": self.timestamp,
            "edited_timestamp": self.edited_timestamp,
            "tts": self.tts,
            "mention_everyone": self.pings.everyone,
            "mentions": [u.payload() for u in self.mentions],
            "mention_roles": [str(r) for r in sorted(self.pings.roles)],
            "attachments": [] if withheld else [a.payload() for a in self.attachments],
            "embeds": [] if withheld else self.embeds,
            "components": [] if withheld else self.components,
            "pinned": False,
            "flags": self.flags,
        }
        if self.thread is not None:
            payload["thread"] = self.thread.payload()
        if self.guild_id is not None:
            payload["guild_id"] = str(self.guild_id)
        if self.reference is not None:
            payload["message_reference"] = self.reference
        if self.nonce is not None:
            payload["nonce"] = self.nonce
        if self.origin is not None:
            payload.update(self._origin_fields(self.origin))
        return payload

    def _origin_fields(self, origin: InteractionOrigin) -> dict[str, Any]:
        owners = {"0": str(origin.guild_id or 0)}
        metadata: dict[str, Any] = {
            "id": str(origin.id),
            "type": origin.kind,
            "user": origin.user.payload(),
            "authorizing_integration_owners": owners,
        }
        fields: dict[str, Any] = {
            "application_id": str(self.author.id),
            "webhook_id": str(self.author.id),
            "interaction_metadata": metadata,
        }
        if origin.name is not None:
            fields["interaction"] = {
                "id": str(origin.id),
                "type": origin.kind,
                "name": origin.name,
                "user": origin.user.payload(),
            }
        return fields
