"""The world's entities (users, servers, roles, channels, members) and their wire payloads.

Payload shapes follow Discord API v10, including the fields discord.py reads
without a default (``discriminator``, ``avatar``, member ``flags``...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.fakediscord.permissions import Overwrite

TEXT_CHANNEL = 0
DM_CHANNEL = 1

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

    def payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": self.name,
            "permissions": str(self.permissions),
            "position": self.position,
            "color": 0,
            "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
            "hoist": False,
            "icon": None,
            "unicode_emoji": None,
            "managed": False,
            "mentionable": self.mentionable,
            "flags": 0,
        }


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
            "flags": 0,
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
    members: dict[int, Member] = field(default_factory=dict)
    locale: str = "en-US"
    premium_tier: int = 0

    @property
    def everyone(self) -> Role:
        return self.roles[self.id]

    @property
    def upload_limit(self) -> int:
        return UPLOAD_LIMITS[self.premium_tier]

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
            "threads": [],
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
