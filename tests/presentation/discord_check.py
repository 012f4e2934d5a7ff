"""Checks a message the way Discord would, using the fake Discord's independent validator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from discord import Embed

from fakediscord.errors import FormErrors
from fakediscord.send_limits import check_message


def problems(*, content: str | None = None, embeds: Sequence[Embed] = ()) -> dict[str, Any]:
    """Discord's 50035 error tree for this message; empty when Discord would accept it."""
    payload: dict[str, Any] = {"embeds": [embed.to_dict() for embed in embeds]}
    if content is not None:
        payload["content"] = content
    errors = FormErrors()
    check_message(payload, errors)
    return errors.tree


def assert_sendable(*, content: str | None = None, embeds: Sequence[Embed] = ()) -> None:
    assert problems(content=content, embeds=embeds) == {}
    assert len(embeds) <= 10
    assert sum(len(embed) for embed in embeds) <= 6000


def text_of(embeds: Sequence[Embed]) -> str:
    """Everything a reader sees in the embeds, as one string."""
    parts: list[str] = []
    for embed in embeds:
        data = embed.to_dict()
        parts += [data.get("author", {}).get("name", ""), data.get("title", "")]
        parts.append(data.get("description", ""))
        for field in data.get("fields", []):
            parts += [field["name"], field["value"]]
        parts.append(data.get("footer", {}).get("text", ""))
    return "\n".join(parts)
