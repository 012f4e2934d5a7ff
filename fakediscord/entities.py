"""The world's entities (users, servers, roles, channels, members) and their wire payloads.

Payload shapes follow Discord API v10, including the fields discord.py reads
without a default (``discriminator``, ``avatar``, member ``flags``...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fakediscord.permissions import Overwrite, Permission

TEXT_CHANNEL = 0
DM_CHANNEL = 1
PUBLIC_THREAD = 11
#: the minutes after which Discord may archive an idle thread
ARCHIVE_DURATIONS = (60, 1440, 4320, 10080)

MIB = 1024 * 1024
#: per-file upload limit by server boost tier
UPLOAD_LIMITS = {0: 10 * MIB, 1: 10 * MIB, 2: 50 * MIB, 3: 100 * MIB}


@dataclass
class User:
    id: int
    username: str
    bot: bool = False
    global_name: str | None = None
    #: False: the user blocks DMs from server members, so sending a DM fails with 50007
    dms_open: bool = True
    locale: str = "en-US"

    def payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "username": self.username,
            "discriminator": "0",
            "global_name": self.global_name,
            "avatar": None,
            "banner": None,
            "accent_color": None,
            "avatar_decoration_data": None,
            "public_flags": 0,
            "flags": 0,
            "bot": self.bot,
        }


@dataclass
class Role:
    id: int
    guild_id: int
    name: str
    permissions: int
    position: int = 0
    mentionable: bool = False
    #: who manages the role, as Discord's ``tags`` say (``{"bot_id": ...}``, ``{"integration_id":
    #: ...}``, ``{"premium_subscriber": None}``); None for a role people hand out
    tags: dict[str, str | None] | None = None

    @property
    def managed(self) -> bool:
        """Integration, bot and booster roles: nobody can give or take them by hand."""
        return self.tags is not None

    @property
    def is_everyone(self) -> bool:
        return self.id == self.guild_id

    @property
    def rank(self) -> tuple[int, int]:
        """Hierarchy order, as Discord and discord.py compare roles: @everyone lowest, then by
        position, and on a tie the older role (smaller id) ranks higher."""
        if self.is_everyone:
            return (-1, 0)
        return (self.position, -self.id)

    def payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "id": str(self.id),
            "name": self.name,
            "permissions": str(self.permissions),
            "position": self.position,
            "color": 0,
            "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
            "hoist": False,
            "icon": None,
            "unicode_emoji": None,
            "managed": self.managed,
            "mentionable": self.mentionable,
            "flags": 0,
        }
        if self.tags is not None:
            payload["tags"] = dict(self.tags)
        return payload


@dataclass
class Channel:
    id: int
    name: str
    kind: int = TEXT_CHANNEL
    guild_id: int | None = None
    position: int = 0
    topic: str | None = None
    overwrites: dict[int, Overwrite] = field(default_factory=dict)
    #: the other side of a DM channel
    recipient: User | None = None
    last_message_id: int | None = None

    @property
    def send_permission(self) -> Permission:
        """What posting here needs (threads have a permission of their own)."""
        return Permission.SEND_MESSAGES

    def payload(self) -> dict[str, Any]:
        if self.kind == DM_CHANNEL:
            assert self.recipient is not None
            return {
                "id": str(self.id),
                "type": DM_CHANNEL,
                "last_message_id": _maybe_str(self.last_message_id),
                "recipients": [self.recipient.payload()],
                "flags": 0,
            }
        return {
            "id": str(self.id),
            "type": self.kind,
            "guild_id": str(self.guild_id),
            "name": self.name,
            "position": self.position,
            "topic": self.topic,
            "nsfw": False,
            "parent_id": None,
            "rate_limit_per_user": 0,
            "last_message_id": _maybe_str(self.last_message_id),
            "permission_overwrites": [o.payload() for o in self.overwrites.values()],
            "default_auto_archive_duration": ARCHIVE_DURATIONS[1],
            "flags": 0,
        }


@dataclass
class Thread(Channel):
    """A public thread started from a message; its id is that message's id.

    It has no overwrites of its own: permissions come from ``parent_id``'s channel.
    """

    kind: int = PUBLIC_THREAD
    parent_id: int = 0
    owner_id: int = 0
    auto_archive_duration: int = ARCHIVE_DURATIONS[1]
    created_at: str = ""
    #: messages in the thread (not counting the starter message, which lives in the parent)
    message_count: int = 0
    total_message_sent: int = 0
    member_ids: set[int] = field(default_factory=set)

    @property
    def starter_message_id(self) -> int:
        return self.id

    @property
    def send_permission(self) -> Permission:
        return Permission.SEND_MESSAGES_IN_THREADS

    def payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "type": self.kind,
            "guild_id": str(self.guild_id),
            "parent_id": str(self.parent_id),
            "owner_id": str(self.owner_id),
            "name": self.name,
            "last_message_id": _maybe_str(self.last_message_id),
            "rate_limit_per_user": 0,
            "message_count": self.message_count,
            "member_count": len(self.member_ids),
            "total_message_sent": self.total_message_sent,
            "flags": 0,
            "applied_tags": [],
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": self.auto_archive_duration,
                "archive_timestamp": self.created_at,
                "locked": False,
                "create_timestamp": self.created_at,
            },
        }


@dataclass
class Member:
    user: User
    guild_id: int
    role_ids: list[int]
    joined_at: str
    nick: str | None = None

    def payload(self, permissions: int | None = None) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "user": self.user.payload(),
            "roles": [str(r) for r in self.role_ids],
            "nick": self.nick,
            "avatar": None,
            "banner": None,
            "joined_at": self.joined_at,
            "premium_since": None,
            "deaf": False,
            "mute": False,
            "pending": False,
            "flags": 0,
            "communication_disabled_until": None,
        }
        if permissions is not None:
            payload["permissions"] = str(permissions)
        return payload


@dataclass
class Guild:
    id: int
    name: str
    owner_id: int
    roles: dict[int, Role] = field(default_factory=dict)
    channels: dict[int, Channel] = field(default_factory=dict)
    threads: dict[int, Thread] = field(default_factory=dict)
    members: dict[int, Member] = field(default_factory=dict)
    locale: str = "en-US"
    premium_tier: int = 0

    @property
    def everyone(self) -> Role:
        return self.roles[self.id]

    @property
    def upload_limit(self) -> int:
        return UPLOAD_LIMITS[self.premium_tier]

    @property
    def bot_role(self) -> Role:
        """The role Discord made for the bot when it joined (managed, tagged with its id)."""
        return next(r for r in self.roles.values() if r.tags and "bot_id" in r.tags)

    def create_payload(self, joined_at: str, *, all_members: bool, bot_id: int) -> dict[str, Any]:
        """GUILD_CREATE: the whole guild; all members only with the GUILD_MEMBERS intent."""
        members = [m for m in self.members.values() if all_members or m.user.id == bot_id]
        return {
            "id": str(self.id),
            "name": self.name,
            "owner_id": str(self.owner_id),
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "banner": None,
            "description": None,
            "features": [],
            "verification_level": 0,
            "default_message_notifications": 1,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "premium_tier": self.premium_tier,
            "premium_subscription_count": 0,
            "preferred_locale": self.locale,
            "system_channel_id": None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "public_updates_channel_id": None,
            "afk_channel_id": None,
            "afk_timeout": 300,
            "vanity_url_code": None,
            "large": False,
            "unavailable": False,
            "member_count": len(self.members),
            "joined_at": joined_at,
            "roles": [r.payload() for r in self.roles.values()],
            "channels": [c.payload() for c in self.channels.values()],
            "members": [m.payload() for m in members],
            "threads": [t.payload() for t in self.threads.values()],
            "presences": [],
            "voice_states": [],
            "emojis": [],
            "stickers": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }


@dataclass
class Application:
    id: int
    name: str
    owner: User
    bot: User
    flags: int = 0

    def payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": self.name,
            "description": "",
            "icon": None,
            "bot_public": False,
            "bot_require_code_grant": False,
            "owner": self.owner.payload(),
            "team": None,
            "verify_key": "0" * 64,
            "flags": self.flags,
            "bot": self.bot.payload(),
            "tags": [],
            "redirect_uris": [],
            "interactions_endpoint_url": None,
            "integration_types_config": {"0": {}},
        }


def _maybe_str(value: int | None) -> str | None:
    return None if value is None else str(value)
