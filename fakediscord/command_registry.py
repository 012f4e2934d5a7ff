"""Registered application commands, as ``tree.sync()`` leaves them, and who may use them.

Bulk overwrite keeps a command's id when its name and type stay, as Discord
does. Server admins can override ``default_member_permissions`` per command
(Integrations settings); ``set_permission`` models that, and ``may_use`` is the
check the Discord client applies before it lets a user invoke a command.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fakediscord.ids import Snowflakes
from fakediscord.permissions import Permission

CHAT_INPUT = 1


@dataclass
class RegisteredCommand:
    id: int
    application_id: int
    guild_id: int | None
    version: int
    data: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def kind(self) -> int:
        return int(self.data.get("type", CHAT_INPUT))

    @property
    def default_member_permissions(self) -> str | None:
        """A bitfield string; ``"0"`` means administrators only, ``None`` everyone."""
        value = self.data.get("default_member_permissions")
        return None if value is None else str(value)

    def payload(self) -> dict[str, Any]:
        payload = {
            "type": CHAT_INPUT,
            "description": "",
            "options": [],
            "nsfw": False,
            "contexts": None,
            "integration_types": [0],
            **self.data,
            "id": str(self.id),
            "application_id": str(self.application_id),
            "version": str(self.version),
            "default_member_permissions": self.default_member_permissions,
        }
        if self.guild_id is not None:
            payload["guild_id"] = str(self.guild_id)
        return payload


class CommandRegistry:
    def __init__(self, ids: Snowflakes, application_id: int) -> None:
        self._ids = ids
        self._application_id = application_id
        self._scopes: dict[int | None, list[RegisteredCommand]] = {}
        self._overrides: dict[tuple[int, int], dict[int, bool]] = {}

    def overwrite(
        self, guild_id: int | None, commands: Sequence[Mapping[str, Any]]
    ) -> list[RegisteredCommand]:
        old = {(c.name, c.kind): c for c in self._scopes.get(guild_id, [])}
        new = []
        for data in commands:
            key = (str(data["name"]), int(data.get("type", CHAT_INPUT)))
            kept = old.get(key)
            new.append(
                RegisteredCommand(
                    id=kept.id if kept else self._ids.next(),
                    application_id=self._application_id,
                    guild_id=guild_id,
                    version=self._ids.next(),
                    data=dict(data),
                )
            )
        self._scopes[guild_id] = new
        return new

    def listed(self, guild_id: int | None) -> list[RegisteredCommand]:
        return list(self._scopes.get(guild_id, []))

    def find(self, name: str, guild_id: int | None, kind: int = CHAT_INPUT) -> RegisteredCommand:
        """What a user sees in a server: its guild commands, then the global ones."""
        scopes = [guild_id, None] if guild_id is not None else [None]
        for scope in scopes:
            for command in self._scopes.get(scope, []):
                if command.name == name and command.kind == kind:
                    return command
        where = f"guild {guild_id}" if guild_id is not None else "DMs"
        raise LookupError(f"no command {name!r} of type {kind} is registered for {where}")

    def set_permission(
        self, guild_id: int, command: RegisteredCommand, target_id: int, *, allow: bool
    ) -> None:
        """An Integrations-settings override for a role, a user, or @everyone (the guild id)."""
        self._overrides.setdefault((guild_id, command.id), {})[target_id] = allow

    def may_use(
        self,
        command: RegisteredCommand,
        *,
        guild_id: int,
        user_id: int,
        role_ids: Iterable[int],
        permissions: int,
    ) -> bool:
        overrides = self._overrides.get((guild_id, command.id), {})
        if user_id in overrides:
            return overrides[user_id]
        verdicts = [overrides[r] for r in role_ids if r in overrides]
        if verdicts:
            return any(verdicts)
        if guild_id in overrides:
            return overrides[guild_id]
        if permissions & Permission.ADMINISTRATOR:
            return True
        required = command.default_member_permissions
        if required is None:
            return True
        needed = int(required)
        return needed != 0 and permissions & needed == needed
