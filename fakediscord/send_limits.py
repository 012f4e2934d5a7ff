"""Discord's size limits on what a bot sends: messages, embeds, components, choices, modals.

Each check adds to a ``FormErrors`` at the field's path, so one bad request
yields Discord's 50035 with every problem in it, not just the first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from fakediscord.errors import FormErrors, Path

CONTENT = 2000
EMBEDS = 10
EMBED_TOTAL = 6000
TITLE = 256
DESCRIPTION = 4096
FIELDS = 25
FIELD_NAME = 256
FIELD_VALUE = 1024
FOOTER = 2048
AUTHOR_NAME = 256
ACTION_ROWS = 5
ROW_ITEMS = 5
CUSTOM_ID = 100
BUTTON_LABEL = 80
CHOICES = 25
CHOICE_NAME = 100
CHOICE_VALUE = 100
MODAL_TITLE = 45
MODAL_ITEMS = 5
ALLOWED_MENTION_PARSE = {"everyone", "roles", "users"}
COMMAND_NAME = re.compile(r"^[-_'\w]{1,32}$")
CONTEXT_MENU_NAME = 32
COMMAND_DESCRIPTION = 100
OPTIONS = 25
CHAT_INPUT = 1
USER_COMMAND = 2
MESSAGE_COMMAND = 3
#: commands per application and scope (global, or one guild), by type
COMMANDS_PER_TYPE = {CHAT_INPUT: 100, USER_COMMAND: 15, MESSAGE_COMMAND: 15}

ACTION_ROW = 1
BUTTON = 2


def check_message(payload: Mapping[str, Any], errors: FormErrors, path: Path = ()) -> None:
    content = payload.get("content")
    if isinstance(content, str) and len(content) > CONTENT:
        errors.too_long([*path, "content"], CONTENT)
    embeds = payload.get("embeds") or []
    if len(embeds) > EMBEDS:
        errors.too_long([*path, "embeds"], EMBEDS)
    total = 0
    for index, embed in enumerate(embeds):
        total += _check_embed(embed, errors, [*path, "embeds", index])
    if total > EMBED_TOTAL:
        errors.add(
            [*path, "embeds"],
            "MAX_EMBED_SIZE_EXCEEDED",
            f"Embed size exceeds maximum size of {EMBED_TOTAL}",
        )
    flags = payload.get("flags") or 0
    components = payload.get("components") or []
    if components and not flags & (1 << 15):
        _check_action_rows(components, errors, [*path, "components"])
    _check_allowed_mentions(payload.get("allowed_mentions"), errors, [*path, "allowed_mentions"])


def _check_embed(embed: Mapping[str, Any], errors: FormErrors, path: Path) -> int:
    """Checks one embed and returns how many characters count towards the 6000 total."""
    counted = 0
    for value, limit, where in (
        (embed.get("title"), TITLE, ["title"]),
        (embed.get("description"), DESCRIPTION, ["description"]),
        ((embed.get("footer") or {}).get("text"), FOOTER, ["footer", "text"]),
        ((embed.get("author") or {}).get("name"), AUTHOR_NAME, ["author", "name"]),
    ):
        counted += _measure(value, limit, errors, [*path, *where])
    fields = embed.get("fields") or []
    if len(fields) > FIELDS:
        errors.too_long([*path, "fields"], FIELDS)
    for index, item in enumerate(fields):
        where = [*path, "fields", index]
        for key, limit in (("name", FIELD_NAME), ("value", FIELD_VALUE)):
            counted += _measure(item.get(key), limit, errors, [*where, key], required=True)
    return counted


def _measure(
    value: str | None, limit: int, errors: FormErrors, path: Path, *, required: bool = False
) -> int:
    if value is None or value == "":
        if required:
            errors.add(path, "BASE_TYPE_REQUIRED", "This field is required")
        return 0
    if len(value) > limit:
        errors.too_long(path, limit)
    return len(value)


def _check_action_rows(rows: Sequence[Mapping[str, Any]], errors: FormErrors, path: Path) -> None:
    if len(rows) > ACTION_ROWS:
        errors.too_long(path, ACTION_ROWS)
    for index, row in enumerate(rows):
        where = [*path, index]
        if row.get("type") != ACTION_ROW:
            errors.add([*where, "type"], "UNION_TYPE_CHOICES", "Value must be an action row.")
            continue
        items = row.get("components") or []
        if not items:
            errors.too_short([*where, "components"], 1)
        if len(items) > ROW_ITEMS:
            errors.too_long([*where, "components"], ROW_ITEMS)
        for position, item in enumerate(items):
            _check_component(item, errors, [*where, "components", position])


def _check_component(item: Mapping[str, Any], errors: FormErrors, path: Path) -> None:
    custom_id = item.get("custom_id")
    if custom_id is not None and len(custom_id) > CUSTOM_ID:
        errors.too_long([*path, "custom_id"], CUSTOM_ID)
    if item.get("type") == BUTTON:
        label = item.get("label")
        if label is not None and len(label) > BUTTON_LABEL:
            errors.too_long([*path, "label"], BUTTON_LABEL)
        if custom_id is None and item.get("url") is None and item.get("sku_id") is None:
            errors.add([*path, "custom_id"], "BASE_TYPE_REQUIRED", "This field is required")


def _check_allowed_mentions(allowed: Any, errors: FormErrors, path: Path) -> None:
    if allowed is None:
        return
    parse = set(allowed.get("parse", []))
    unknown = parse - ALLOWED_MENTION_PARSE
    if unknown:
        errors.add([*path, "parse"], "BASE_TYPE_CHOICES", f"Value must be one of {unknown}.")
    for kind in ("users", "roles"):
        if kind in parse and allowed.get(kind):
            errors.add(
                [*path, "parse"],
                "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                f'parse:["{kind}"] and {kind}: [ids...] are mutually exclusive.',
            )


def check_choices(choices: Sequence[Mapping[str, Any]], errors: FormErrors, path: Path) -> None:
    if len(choices) > CHOICES:
        errors.too_long(path, CHOICES)
    for index, choice in enumerate(choices):
        name = str(choice.get("name", ""))
        if not name:
            errors.too_short([*path, index, "name"], 1)
        elif len(name) > CHOICE_NAME:
            errors.too_long([*path, index, "name"], CHOICE_NAME)
        value = choice.get("value")
        if isinstance(value, str) and len(value) > CHOICE_VALUE:
            errors.too_long([*path, index, "value"], CHOICE_VALUE)


def check_modal(data: Mapping[str, Any], errors: FormErrors, path: Path) -> None:
    title = str(data.get("title", ""))
    if not title:
        errors.too_short([*path, "title"], 1)
    elif len(title) > MODAL_TITLE:
        errors.too_long([*path, "title"], MODAL_TITLE)
    custom_id = str(data.get("custom_id", ""))
    if not custom_id:
        errors.too_short([*path, "custom_id"], 1)
    elif len(custom_id) > CUSTOM_ID:
        errors.too_long([*path, "custom_id"], CUSTOM_ID)
    items = data.get("components") or []
    if not items:
        errors.too_short([*path, "components"], 1)
    elif len(items) > MODAL_ITEMS:
        errors.too_long([*path, "components"], MODAL_ITEMS)


def check_commands(commands: Sequence[Mapping[str, Any]], errors: FormErrors) -> None:
    """A bulk overwrite: each command, and how many of each type one scope may hold."""
    for kind, limit in COMMANDS_PER_TYPE.items():
        if sum(1 for c in commands if c.get("type", CHAT_INPUT) == kind) > limit:
            errors.too_long([], limit)
    for index, command in enumerate(commands):
        _check_command(command, errors, [index])


def _check_command(command: Mapping[str, Any], errors: FormErrors, path: Path) -> None:
    kind = command.get("type", CHAT_INPUT)
    if kind not in COMMANDS_PER_TYPE:
        errors.add([*path, "type"], "BASE_TYPE_CHOICES", "Value must be one of {1, 2, 3}.")
    elif kind == CHAT_INPUT:
        _check_named(command, errors, path)
        _check_options(command.get("options") or [], errors, [*path, "options"])
    else:
        _check_context_menu(command, errors, path)


def _check_context_menu(command: Mapping[str, Any], errors: FormErrors, path: Path) -> None:
    """User and message commands: a display name (spaces and capitals allowed), nothing else."""
    name = str(command.get("name", ""))
    if not name.strip() or len(name) > CONTEXT_MENU_NAME or name != name.strip():
        errors.add([*path, "name"], "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
    if command.get("description"):
        errors.add(
            [*path, "description"],
            "APPLICATION_COMMAND_CONTEXT_MENU_DESCRIPTION",
            "Context menu commands cannot have a description",
        )
    if command.get("options"):
        errors.add(
            [*path, "options"],
            "APPLICATION_COMMAND_CONTEXT_MENU_OPTIONS",
            "Context menu commands cannot have options",
        )


def _check_named(item: Mapping[str, Any], errors: FormErrors, path: Path) -> None:
    """A slash command or option: a lowercase name of word characters, and a description."""
    name = str(item.get("name", ""))
    if not COMMAND_NAME.match(name) or name != name.lower():
        errors.add([*path, "name"], "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
    description = str(item.get("description", ""))
    if not description:
        errors.too_short([*path, "description"], 1)
    elif len(description) > COMMAND_DESCRIPTION:
        errors.too_long([*path, "description"], COMMAND_DESCRIPTION)


def _check_options(options: Sequence[Mapping[str, Any]], errors: FormErrors, path: Path) -> None:
    if len(options) > OPTIONS:
        errors.too_long(path, OPTIONS)
    for index, option in enumerate(options):
        where = [*path, index]
        _check_named(option, errors, where)
        check_choices(option.get("choices") or [], errors, [*where, "choices"])
        _check_options(option.get("options") or [], errors, [*where, "options"])
