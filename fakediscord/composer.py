"""Creating, editing and deleting messages, shared by channel sends, interaction responses
and follow-ups, so every path validates, stores, attaches files and announces the same way.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from typing import Any

from fakediscord import errors
from fakediscord.bodies import Body, Upload
from fakediscord.changes import Changes
from fakediscord.entities import UPLOAD_LIMITS, Channel, Thread, User
from fakediscord.errors import FormErrors, Path
from fakediscord.fake_time import FakeClock
from fakediscord.gateway import DIRECT_MESSAGES, GUILD_MESSAGES, GUILDS, Gateway
from fakediscord.ids import Snowflakes
from fakediscord.messages import (
    EPHEMERAL,
    HAS_THREAD,
    IS_COMPONENTS_V2,
    LOADING,
    REPLY,
    SUPPRESS_EMBEDS,
    SUPPRESS_NOTIFICATIONS,
    Attachment,
    InteractionOrigin,
    Message,
)
from fakediscord.pings import resolve_pings
from fakediscord.send_limits import check_message
from fakediscord.signed_urls import Cdn
from fakediscord.world import World

SENDABLE_FLAGS = SUPPRESS_EMBEDS | SUPPRESS_NOTIFICATIONS | IS_COMPONENTS_V2
EDITABLE_FLAGS = SUPPRESS_EMBEDS | IS_COMPONENTS_V2


class Composer:
    def __init__(
        self,
        world: World,
        ids: Snowflakes,
        clock: FakeClock,
        cdn: Cdn,
        changes: Changes,
        gateway: Gateway,
    ) -> None:
        self._world = world
        self._ids = ids
        self._clock = clock
        self._cdn = cdn
        self._changes = changes
        self._gateway = gateway
        self._nonces: dict[tuple[int, str], int] = {}

    async def create(
        self,
        channel: Channel,
        author: User,
        body: Body,
        *,
        path: Path = (),
        ephemeral_ok: bool = False,
        origin: InteractionOrigin | None = None,
        kind: int | None = None,
    ) -> Message:
        payload = body.payload
        form = FormErrors()
        check_message(payload, form, path)
        form.raise_if_any()
        nonce = payload.get("nonce")
        if nonce is not None and payload.get("enforce_nonce"):
            earlier = self._nonces.get((channel.id, str(nonce)))
            if earlier is not None:
                return self._world.messages[earlier]
        reference, replied_to = self._reference(channel, payload.get("message_reference"))
        allowed = SENDABLE_FLAGS | (EPHEMERAL if ephemeral_ok else 0)
        message = Message(
            id=self._ids.next(),
            channel_id=channel.id,
            guild_id=channel.guild_id,
            author=author,
            timestamp=self._clock.iso(),
            content=payload.get("content") or "",
            embeds=_embeds(payload.get("embeds")),
            components=list(payload.get("components") or []),
            flags=int(payload.get("flags") or 0) & allowed,
            allowed_mentions=payload.get("allowed_mentions"),
            tts=bool(payload.get("tts", False)),
            kind=kind if kind is not None else (REPLY if reference else 0),
            reference=reference,
            nonce=None if nonce is None else str(nonce),
            origin=origin,
        )
        message.attachments = self._attachments(channel, [], body)
        if not (message.content or message.embeds or message.attachments or message.components):
            raise errors.empty_message()
        self._resolve_pings(message, replied_to)
        if message.nonce is not None:
            self._nonces[(channel.id, message.nonce)] = message.id
        await self._store(channel, message)
        return message

    async def placeholder(
        self, channel: Channel, author: User, origin: InteractionOrigin, *, flags: int, kind: int
    ) -> Message:
        """The "thinking..." message a deferred response shows until it is edited."""
        message = Message(
            id=self._ids.next(),
            channel_id=channel.id,
            guild_id=channel.guild_id,
            author=author,
            timestamp=self._clock.iso(),
            flags=LOADING | (flags & EPHEMERAL),
            kind=kind,
            origin=origin,
        )
        await self._store(channel, message)
        return message

    async def edit(self, message: Message, body: Body, *, path: Path = ()) -> Message:
        payload = body.payload
        form = FormErrors()
        check_message(payload, form, path)
        form.raise_if_any()
        channel = self._world.channel(message.channel_id)
        filling = message.loading
        # Work on copies so a refused edit leaves the message as it was.
        content = (payload["content"] or "") if "content" in payload else message.content
        embeds = _embeds(payload["embeds"]) if "embeds" in payload else message.embeds
        components = (
            list(payload["components"] or []) if "components" in payload else message.components
        )
        flags = message.flags & ~LOADING
        if payload.get("flags") is not None:
            flags = (flags & ~EDITABLE_FLAGS) | (int(payload["flags"]) & EDITABLE_FLAGS)
        listed = payload.get("attachments")
        kept_ids = None if listed is None else {int(a["id"]) for a in listed}
        kept = [a for a in message.attachments if kept_ids is None or a.id in kept_ids]
        attachments = self._attachments(channel, kept, body)
        if not (content or embeds or attachments or components):
            raise errors.empty_message()
        message.content, message.embeds, message.components = content, embeds, components
        message.flags, message.attachments = flags, attachments
        if "allowed_mentions" in payload:
            message.allowed_mentions = payload["allowed_mentions"]
        if filling:
            # Filling a deferred placeholder is the real send: it pings, and shows no "edited".
            self._resolve_pings(message, None)
        else:
            message.edited_timestamp = self._clock.iso()
        message.edits += 1
        self._changes.bump()
        await self._announce("MESSAGE_UPDATE", channel, message)
        return message

    async def start_thread(
        self, channel: Channel, message: Message, owner: User, *, name: str, archive_after: int
    ) -> Thread:
        """A public thread from ``message``: THREAD_CREATE (GUILDS intent), and the starter
        message now shows the thread (MESSAGE_UPDATE with ``thread`` and HAS_THREAD)."""
        thread = self._world.start_thread(
            channel, message, owner, name=name, archive_after=archive_after
        )
        message.flags |= HAS_THREAD
        self._changes.bump()
        created = {**thread.payload(), "newly_created": True}
        await self._gateway.publish("THREAD_CREATE", created, GUILDS)
        await self._announce("MESSAGE_UPDATE", channel, message)
        return thread

    async def delete(self, message: Message) -> None:
        message.deleted = True
        channel = self._world.channel(message.channel_id)
        if isinstance(channel, Thread) and not message.ephemeral:
            channel.message_count -= 1
        self._changes.bump()
        data: dict[str, Any] = {"id": str(message.id), "channel_id": str(channel.id)}
        if channel.guild_id is not None:
            data["guild_id"] = str(channel.guild_id)
        if not message.ephemeral:
            await self._gateway.publish("MESSAGE_DELETE", data, _intent(channel))

    async def _store(self, channel: Channel, message: Message) -> None:
        self._world.messages[message.id] = message
        if not message.ephemeral:
            channel.last_message_id = message.id
            if isinstance(channel, Thread):
                channel.message_count += 1
                channel.total_message_sent += 1
        self._changes.bump()
        await self._announce("MESSAGE_CREATE", channel, message)

    async def _announce(self, event: str, channel: Channel, message: Message) -> None:
        if not message.ephemeral:
            payload = message.payload(self._gateway.live_reader)
            await self._gateway.publish(event, payload, _intent(channel))

    def _reference(
        self, channel: Channel, reference: dict[str, Any] | None
    ) -> tuple[dict[str, Any] | None, User | None]:
        if not reference:
            return None, None
        target = self._world.messages.get(int(reference.get("message_id") or 0))
        if target is None or target.channel_id != channel.id or target.deleted:
            if reference.get("fail_if_not_exists", True):
                raise errors.invalid_form(
                    ["message_reference"], "REPLIES_UNKNOWN_MESSAGE", "Unknown message"
                )
            return None, None
        stored = {"type": 0, "message_id": str(target.id), "channel_id": str(channel.id)}
        if channel.guild_id is not None:
            stored["guild_id"] = str(channel.guild_id)
        return stored, target.author

    def _attachments(
        self, channel: Channel, kept: list[Attachment], body: Body
    ) -> list[Attachment]:
        """``kept`` plus the uploads; a payload ``attachments`` list names and picks uploads."""
        limit = (
            self._world.guilds[channel.guild_id].upload_limit
            if channel.guild_id is not None
            else UPLOAD_LIMITS[0]
        )
        listed = body.payload.get("attachments")
        described = {int(a["id"]): a for a in listed or []}
        result = list(kept)
        for upload in body.uploads:
            if listed is not None and upload.index not in described:
                continue
            if len(upload.data) > limit:
                raise errors.too_large()
            result.append(self._store_upload(channel, upload, described.get(upload.index, {})))
        return result

    def _store_upload(
        self, channel: Channel, upload: Upload, described: dict[str, Any]
    ) -> Attachment:
        attachment_id = self._ids.next()
        filename = str(described.get("filename") or upload.filename)
        attachment = Attachment(
            id=attachment_id,
            filename=filename,
            data=upload.data,
            url=self._cdn.url_for(channel.id, attachment_id, filename),
            content_type=mimetypes.guess_type(filename)[0],
            description=described.get("description"),
        )
        self._world.files[attachment_id] = attachment
        return attachment

    def _resolve_pings(self, message: Message, replied_to: User | None) -> None:
        guild = self._world.guilds.get(message.guild_id or 0)
        message.pings = resolve_pings(
            message.content,
            message.allowed_mentions,
            user_exists=lambda u: u in self._world.users,
            role_exists=lambda r: guild is not None and r in guild.roles,
            replied_user_id=replied_to.id if replied_to else None,
        )
        message.mentions = [self._world.users[u] for u in sorted(message.pings.users)]


def _embeds(embeds: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [{"type": "rich", **e} for e in embeds or []]


def _intent(channel: Channel) -> int:
    return GUILD_MESSAGES if channel.guild_id is not None else DIRECT_MESSAGES
