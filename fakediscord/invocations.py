"""The user's side: turning "alice runs /admin setup in #general" into interaction data.

The Discord client only lets a user do what is possible, so these builders
refuse with ValueError/PermissionError where the client would: unknown
options, missing required ones, values outside choices or bounds, files over
the size limit, commands the member may not use, disabled buttons, a message
command on a message the user cannot see.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fakediscord.command_registry import CommandRegistry, RegisteredCommand
from fakediscord.entities import UPLOAD_LIMITS, Channel, Guild, Member, User
from fakediscord.ids import Snowflakes
from fakediscord.interaction_rules import InteractionRecord, Kind
from fakediscord.messages import Attachment, Message
from fakediscord.permissions import Permission
from fakediscord.signed_urls import Cdn
from fakediscord.world import World

SUBCOMMANDS = {1, 2}
STRING = 3
INTEGER = 4
BOOLEAN = 5
USER = 6
CHANNEL = 7
ROLE = 8
MENTIONABLE = 9
NUMBER = 10
ATTACHMENT = 11
MESSAGE_COMMAND = 3
ACTION_ROW = 1
STRING_SELECT = 3
TEXT_INPUT = 4
LABEL = 18
SELECTS = {3, 5, 6, 7, 8}


class HasId(Protocol):
    @property
    def id(self) -> int: ...


Ref = int | HasId
Upload = tuple[str, bytes]


def ref_id(ref: Ref) -> int:
    return ref if isinstance(ref, int) else ref.id


@dataclass(frozen=True)
class Draft:
    """An interaction before it gets an id, a token and its envelope."""

    kind: Kind
    data: dict[str, Any]
    guild_id: int | None
    channel_id: int
    user_id: int
    source_message_id: int | None = None


@dataclass(frozen=True)
class Where:
    user: User
    channel: Channel
    guild: Guild | None
    member: Member | None


class Invoker:
    def __init__(self, world: World, ids: Snowflakes, commands: CommandRegistry, cdn: Cdn) -> None:
        self._world = world
        self._ids = ids
        self._commands = commands
        self._cdn = cdn

    def locate(self, guild: Ref | None, channel: Ref | None, user: Ref) -> Where:
        """Where the user acts; no guild and no channel means their DM with the bot."""
        person = self._world.users.get(ref_id(user))
        if person is None:
            raise ValueError(f"unknown user {ref_id(user)}")
        if guild is None:
            dm = self._world.dm_channel(person)
            if channel is not None and ref_id(channel) != dm.id:
                raise ValueError("without a guild, the channel must be the user's DM with the bot")
            return Where(person, dm, None, None)
        server = self._world.guilds.get(ref_id(guild))
        rooms = {} if server is None else {**server.channels, **server.threads}
        if server is None or channel is None or ref_id(channel) not in rooms:
            raise ValueError("the channel must be a channel or thread of that guild")
        member = server.members.get(person.id)
        if member is None:
            raise ValueError(f"{person.username} is not a member of {server.name}")
        room = rooms[ref_id(channel)]
        if not self._world.permissions_in(room, person) & Permission.VIEW_CHANNEL:
            raise PermissionError(f"{person.username} cannot see #{room.name}")
        return Where(person, room, server, member)

    def command(
        self,
        where: Where,
        name: str,
        options: Mapping[str, Any],
        attachments: Sequence[Upload],
        *,
        focused: str | None = None,
    ) -> Draft:
        """A slash command (or, with ``focused``, an autocomplete request for that option)."""
        parts = name.split()
        guild_id = where.guild.id if where.guild else None
        command = self._commands.find(parts[0], guild_id)
        self._check_may_use(where, command)
        schema: list[dict[str, Any]] = list(command.data.get("options") or [])
        chain: list[tuple[str, int]] = []
        for part in parts[1:]:
            spec = next((o for o in schema if o["name"] == part and o["type"] in SUBCOMMANDS), None)
            if spec is None:
                raise ValueError(f"/{name}: {part!r} is not a subcommand here")
            chain.append((part, spec["type"]))
            schema = list(spec.get("options") or [])
        if any(o["type"] in SUBCOMMANDS for o in schema):
            raise ValueError(f"/{name} needs a subcommand")
        resolved: dict[str, dict[str, Any]] = {}
        filled = self._fill(where, schema, options, attachments, resolved, focused)
        for part, kind in reversed(chain):
            filled = [{"name": part, "type": kind, "options": filled}]
        data: dict[str, Any] = {
            "id": str(command.id),
            "name": command.name,
            "type": command.kind,
            "options": filled,
        }
        if command.guild_id is not None:
            data["guild_id"] = str(command.guild_id)
        if resolved:
            data["resolved"] = resolved
        kind = Kind.AUTOCOMPLETE if focused is not None else Kind.APPLICATION_COMMAND
        return Draft(kind, data, guild_id, where.channel.id, where.user.id)

    def message_command(self, where: Where, name: str, target: Message) -> Draft:
        """``name`` from the Apps menu of ``target``: the whole message rides along in
        ``resolved`` (content and files too: Message Content does not apply here)."""
        guild_id = where.guild.id if where.guild else None
        command = self._commands.find(name, guild_id, MESSAGE_COMMAND)
        self._check_may_use(where, command)
        if target.channel_id != where.channel.id or target.deleted:
            raise ValueError(f"message {target.id} is not in #{where.channel.name}")
        if target.ephemeral and (target.origin is None or target.origin.user.id != where.user.id):
            raise ValueError(f"message {target.id} is another user's ephemeral message")
        data: dict[str, Any] = {
            "id": str(command.id),
            "name": command.name,
            "type": MESSAGE_COMMAND,
            "target_id": str(target.id),
            "resolved": {"messages": {str(target.id): target.payload()}},
        }
        if command.guild_id is not None:
            data["guild_id"] = str(command.guild_id)
        return Draft(Kind.APPLICATION_COMMAND, data, guild_id, where.channel.id, where.user.id)

    def _check_may_use(self, where: Where, command: RegisteredCommand) -> None:
        if where.guild is None or where.member is None:
            return
        allowed = self._world.permissions_in(where.channel, where.user)
        if not allowed & Permission.USE_APPLICATION_COMMANDS:
            raise PermissionError(f"{where.user.username} may not use commands here")
        if not self._commands.may_use(
            command,
            guild_id=where.guild.id,
            user_id=where.user.id,
            role_ids=where.member.role_ids,
            permissions=self._world.guild_permissions(where.guild, where.member),
        ):
            raise PermissionError(f"{where.user.username} may not use /{command.name}")

    def _fill(
        self,
        where: Where,
        schema: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any],
        attachments: Sequence[Upload],
        resolved: dict[str, dict[str, Any]],
        focused: str | None,
    ) -> list[dict[str, Any]]:
        given = dict(options)
        uploads = list(attachments)
        filled = []
        for spec in schema:
            option_name = spec["name"]
            if option_name not in given and spec["type"] == ATTACHMENT and uploads:
                given[option_name] = uploads.pop(0)
            if option_name not in given:
                if spec.get("required") and focused is None:
                    raise ValueError(f"option {option_name!r} is required")
                continue
            value = given.pop(option_name)
            if option_name == focused:
                if not spec.get("autocomplete"):
                    raise ValueError(f"option {option_name!r} has no autocomplete")
                filled.append(
                    {
                        "name": option_name,
                        "type": spec["type"],
                        "value": str(value),
                        "focused": True,
                    }
                )
                continue
            item = {"name": option_name, "type": spec["type"]}
            item["value"] = self._value(where, spec, value, resolved)
            filled.append(item)
        if given or uploads:
            raise ValueError(f"not options of this command: {sorted(given)} {len(uploads)} file(s)")
        if focused is not None and not any(o.get("focused") for o in filled):
            raise ValueError(f"option {focused!r} was not given a value to complete")
        return filled

    def _value(
        self,
        where: Where,
        spec: Mapping[str, Any],
        value: Any,
        resolved: dict[str, dict[str, Any]],
    ) -> Any:
        kind = spec["type"]
        if kind in (STRING, INTEGER, NUMBER):
            converted = {STRING: str, INTEGER: int, NUMBER: float}[kind](value)
            _check_bounds(spec, converted)
            return converted
        if kind == BOOLEAN:
            return bool(value)
        if kind == ATTACHMENT:
            return str(self._upload(where, value, resolved))
        target = ref_id(value)
        if kind in (USER, MENTIONABLE) and target in self._world.users:
            self._resolve_user(where, target, resolved)
        elif kind in (ROLE, MENTIONABLE) and where.guild and target in where.guild.roles:
            resolved.setdefault("roles", {})[str(target)] = where.guild.roles[target].payload()
        elif kind == CHANNEL and target in self._world.channels:
            self._resolve_channel(where, spec, self._world.channels[target], resolved)
        else:
            raise ValueError(f"option {spec['name']!r}: nothing with id {target} fits")
        return str(target)

    def _resolve_user(
        self, where: Where, user_id: int, resolved: dict[str, dict[str, Any]]
    ) -> None:
        user = self._world.users[user_id]
        resolved.setdefault("users", {})[str(user_id)] = user.payload()
        member = where.guild.members.get(user_id) if where.guild else None
        if member is not None:
            payload = member.payload(self._world.permissions_in(where.channel, user))
            del payload["user"]
            resolved.setdefault("members", {})[str(user_id)] = payload

    def _resolve_channel(
        self,
        where: Where,
        spec: Mapping[str, Any],
        channel: Channel,
        resolved: dict[str, dict[str, Any]],
    ) -> None:
        allowed_types = spec.get("channel_types")
        if allowed_types and channel.kind not in allowed_types:
            raise ValueError(f"option {spec['name']!r} does not take #{channel.name}")
        payload = {
            "id": str(channel.id),
            "name": channel.name,
            "type": channel.kind,
            "permissions": str(self._world.permissions_in(channel, where.user)),
        }
        resolved.setdefault("channels", {})[str(channel.id)] = payload

    def _upload(self, where: Where, upload: Upload, resolved: dict[str, dict[str, Any]]) -> int:
        """Stores a user's file on the CDN, as the Discord client does before sending."""
        filename, data = upload
        limit = where.guild.upload_limit if where.guild else UPLOAD_LIMITS[0]
        if len(data) > limit:
            raise ValueError(f"{filename} is over the {limit}-byte upload limit")
        attachment_id = self._ids.next()
        attachment = Attachment(
            id=attachment_id,
            filename=filename,
            data=data,
            url=self._cdn.url_for(where.channel.id, attachment_id, filename),
            content_type=mimetypes.guess_type(filename)[0],
        )
        self._world.files[attachment_id] = attachment
        resolved.setdefault("attachments", {})[str(attachment_id)] = {
            **attachment.payload(),
            "ephemeral": True,
        }
        return attachment_id

    def component(
        self, message: Message, custom_id: str, user: Ref | None, values: Sequence[str] | None
    ) -> Draft:
        """A button press (``values`` None) or a select-menu choice on ``message``.

        ``user`` defaults to whoever the message answered.
        """
        component = _find_component(message.components, custom_id)
        if component is None:
            raise ValueError(f"message {message.id} has no component {custom_id!r}")
        if component.get("disabled"):
            raise ValueError(f"component {custom_id!r} is disabled")
        if user is not None:
            clicker = ref_id(user)
        elif message.origin is not None:
            clicker = message.origin.user.id
        else:
            raise ValueError("say which user acts: the message answers no interaction")
        if message.ephemeral and message.origin and message.origin.user.id != clicker:
            raise ValueError("only the user an ephemeral message was shown to can use it")
        self.locate(message.guild_id, message.channel_id, clicker)
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": component["type"]}
        if component["type"] in SELECTS:
            data["values"] = _checked_values(component, values or [])
        elif values is not None:
            raise ValueError(f"{custom_id!r} is a button; it takes no values")
        return Draft(
            Kind.MESSAGE_COMPONENT, data, message.guild_id, message.channel_id, clicker, message.id
        )

    def modal_submit(
        self, record: InteractionRecord, values: Mapping[str, str | Sequence[str]]
    ) -> Draft:
        """The user fills in and submits the modal the bot answered ``record`` with."""
        if record.modal is None:
            raise ValueError("the bot did not answer this interaction with a modal")
        remaining = dict(values)
        components = [_submitted(c, remaining) for c in record.modal.get("components") or []]
        if remaining:
            raise ValueError(f"the modal has no fields {sorted(remaining)}")
        data = {"custom_id": record.modal["custom_id"], "components": components}
        return Draft(
            Kind.MODAL_SUBMIT,
            data,
            record.guild_id,
            record.channel_id,
            record.user_id,
            record.source_message_id,
        )


def _check_bounds(spec: Mapping[str, Any], value: Any) -> None:
    name = spec["name"]
    choices = spec.get("choices")
    if choices and value not in [c["value"] for c in choices]:
        raise ValueError(f"option {name!r}: {value!r} is not one of the choices")
    if isinstance(value, str):
        if len(value) < spec.get("min_length", 0) or len(value) > spec.get("max_length", 6000):
            raise ValueError(f"option {name!r}: length {len(value)} is out of bounds")
        return
    low, high = spec.get("min_value"), spec.get("max_value")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"option {name!r}: {value} is out of bounds")


def _find_component(items: Sequence[Mapping[str, Any]], custom_id: str) -> dict[str, Any] | None:
    for item in items:
        if item.get("custom_id") == custom_id:
            return dict(item)
        children = [*(item.get("components") or [])]
        for key in ("component", "accessory"):
            if item.get(key):
                children.append(item[key])
        found = _find_component(children, custom_id)
        if found is not None:
            return found
    return None


def _checked_values(component: Mapping[str, Any], values: Sequence[str]) -> list[str]:
    low, high = component.get("min_values", 1), component.get("max_values", 1)
    if not low <= len(values) <= high:
        raise ValueError(f"choose between {low} and {high} values")
    if component["type"] == STRING_SELECT:
        offered = {o["value"] for o in component.get("options") or []}
        if not set(values) <= offered:
            raise ValueError(f"{sorted(set(values) - offered)} are not among the options")
    return [str(v) for v in values]


def _submitted(component: Mapping[str, Any], values: dict[str, str | Sequence[str]]) -> dict:
    """Echoes a modal component back the way Discord submits it, with the user's input."""
    kind = component["type"]
    submitted: dict[str, Any] = {"type": kind}
    if "id" in component:
        submitted["id"] = component["id"]
    if kind == ACTION_ROW:
        submitted["components"] = [_submitted(c, values) for c in component["components"]]
    elif kind == LABEL:
        submitted["component"] = _submitted(component["component"], values)
    elif kind == TEXT_INPUT:
        custom_id = component["custom_id"]
        text = str(values.pop(custom_id, component.get("value") or ""))
        if component.get("required", True) and not text:
            raise ValueError(f"modal field {custom_id!r} is required")
        if len(text) > component.get("max_length", 4000):
            raise ValueError(f"modal field {custom_id!r} is too long")
        submitted.update(custom_id=custom_id, value=text)
    elif kind in SELECTS:
        custom_id = component["custom_id"]
        chosen = values.pop(custom_id, [])
        submitted.update(custom_id=custom_id, values=_checked_values(component, list(chosen)))
    return submitted
