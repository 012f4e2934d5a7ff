"""Permission bits and Discord's channel-permission algorithm.

The fake enforces what the bot may do in a channel (403 50013) and reports the
same numbers in interaction payloads (``permissions``, ``app_permissions``), so
both must come from one computation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntFlag


class Permission(IntFlag):
    ADMINISTRATOR = 1 << 3
    MANAGE_CHANNELS = 1 << 4
    MANAGE_GUILD = 1 << 5
    ADD_REACTIONS = 1 << 6
    VIEW_CHANNEL = 1 << 10
    SEND_MESSAGES = 1 << 11
    MANAGE_MESSAGES = 1 << 13
    EMBED_LINKS = 1 << 14
    ATTACH_FILES = 1 << 15
    READ_MESSAGE_HISTORY = 1 << 16
    MENTION_EVERYONE = 1 << 17
    USE_EXTERNAL_EMOJIS = 1 << 18
    MANAGE_ROLES = 1 << 28
    USE_APPLICATION_COMMANDS = 1 << 31
    MANAGE_THREADS = 1 << 34
    CREATE_PUBLIC_THREADS = 1 << 35
    CREATE_PRIVATE_THREADS = 1 << 36
    SEND_MESSAGES_IN_THREADS = 1 << 38


#: every permission Discord defines today (bits 0..50)
ALL = (1 << 51) - 1

#: what @everyone gets in a new server, restricted to the bits that matter here
EVERYONE_DEFAULT = int(
    Permission.VIEW_CHANNEL
    | Permission.SEND_MESSAGES
    | Permission.EMBED_LINKS
    | Permission.ATTACH_FILES
    | Permission.READ_MESSAGE_HISTORY
    | Permission.ADD_REACTIONS
    | Permission.USE_EXTERNAL_EMOJIS
    | Permission.USE_APPLICATION_COMMANDS
    | Permission.CREATE_PUBLIC_THREADS
    | Permission.CREATE_PRIVATE_THREADS
    | Permission.SEND_MESSAGES_IN_THREADS
)

#: what a bot may do in its own DM channels
DM_DEFAULT = int(
    Permission.VIEW_CHANNEL
    | Permission.SEND_MESSAGES
    | Permission.EMBED_LINKS
    | Permission.ATTACH_FILES
    | Permission.READ_MESSAGE_HISTORY
    | Permission.ADD_REACTIONS
)

ROLE_OVERWRITE = 0
MEMBER_OVERWRITE = 1


@dataclass
class Overwrite:
    target_id: int
    kind: int
    allow: int = 0
    deny: int = 0

    def payload(self) -> dict[str, object]:
        return {
            "id": str(self.target_id),
            "type": self.kind,
            "allow": str(self.allow),
            "deny": str(self.deny),
        }


def base_permissions(*, is_owner: bool, everyone: int, role_permissions: Iterable[int]) -> int:
    """Server-wide permissions: @everyone plus the member's roles; owners and admins get all."""
    if is_owner:
        return ALL
    total = everyone
    for value in role_permissions:
        total |= value
    return ALL if total & Permission.ADMINISTRATOR else total


def apply_overwrites(
    base: int,
    *,
    guild_id: int,
    user_id: int,
    role_ids: Iterable[int],
    overwrites: Mapping[int, Overwrite],
) -> int:
    """Channel overwrites in Discord's order: @everyone, all roles together, the member."""
    if base & Permission.ADMINISTRATOR:
        return ALL
    total = base
    everyone = overwrites.get(guild_id)
    if everyone is not None:
        total = (total & ~everyone.deny) | everyone.allow
    allow = deny = 0
    for role_id in role_ids:
        overwrite = overwrites.get(role_id)
        if overwrite is not None and overwrite.kind == ROLE_OVERWRITE:
            allow |= overwrite.allow
            deny |= overwrite.deny
    total = (total & ~deny) | allow
    member = overwrites.get(user_id)
    if member is not None and member.kind == MEMBER_OVERWRITE:
        total = (total & ~member.deny) | member.allow
    return total if total & Permission.VIEW_CHANNEL else 0
