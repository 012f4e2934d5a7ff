"""Who a message actually pings, given its content and ``allowed_mentions``.

Tests assert on this (e.g. "the bot never pings @everyone"), so it follows
Discord's rules rather than just echoing what was sent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

USER_MENTION = re.compile(r"<@!?(\d+)>")
ROLE_MENTION = re.compile(r"<@&(\d+)>")
EVERYONE_MENTION = re.compile(r"@(everyone|here)")


@dataclass(frozen=True)
class Pings:
    everyone: bool = False
    users: frozenset[int] = field(default_factory=frozenset)
    roles: frozenset[int] = field(default_factory=frozenset)


def resolve_pings(
    content: str,
    allowed: Mapping[str, Any] | None,
    *,
    user_exists: Callable[[int], bool],
    role_exists: Callable[[int], bool],
    replied_user_id: int | None = None,
) -> Pings:
    """Apply ``allowed_mentions``: absent means everything in the content pings."""
    parse = {"everyone", "users", "roles"} if allowed is None else set(allowed.get("parse", []))
    listed_users = set() if allowed is None else {int(u) for u in allowed.get("users", [])}
    listed_roles = set() if allowed is None else {int(r) for r in allowed.get("roles", [])}

    users = {int(u) for u in USER_MENTION.findall(content) if user_exists(int(u))}
    if "users" not in parse:
        users &= listed_users
    roles = {int(r) for r in ROLE_MENTION.findall(content) if role_exists(int(r))}
    if "roles" not in parse:
        roles &= listed_roles
    replied = allowed is None or bool(allowed.get("replied_user", False))
    if replied_user_id is not None and replied:
        users.add(replied_user_id)
    everyone = "everyone" in parse and EVERYONE_MENTION.search(content) is not None
    return Pings(everyone=everyone, users=frozenset(users), roles=frozenset(roles))
