"""Discord's message limits, and the helpers that make text and embeds fit them.

Discord rejects an oversized message outright (400, code 50035) and the learner sees nothing, so
everything the bot shows passes through here: long text is truncated or paginated, never rejected.
Lengths are counted as Python counts them (code points), as discord.py's ``len(embed)`` does.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

from discord import Colour, Embed

CONTENT = 2000
EMBEDS = 10
EMBED_TOTAL = 6000  # across all embeds of one message
TITLE = 256
DESCRIPTION = 4096
FIELDS = 25
FIELD_NAME = 256
FIELD_VALUE = 1024
FOOTER = 2048
AUTHOR_NAME = 256

ELLIPSIS = "…"
BLANK = "\u200b"  # Discord requires field names and values to be non-empty


def truncate(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else cut to fit and ending in an ellipsis."""
    if limit < 0:
        raise ValueError(f"a limit cannot be negative, not {limit}")
    if len(text) <= limit:
        return text
    if limit == 0:
        return ""
    return text[: limit - 1].rstrip() + ELLIPSIS


def fit_embed(embed: Embed) -> Embed:
    """A copy of ``embed`` that Discord accepts: every part truncated to its limit, fields past
    25 dropped, and the 6000-character total kept by trimming the description and the last fields
    (the description keeps at least half of the room left by title, author and footer)."""
    data: dict[str, Any] = copy.deepcopy(embed.to_dict())
    for part, key, limit in (("footer", "text", FOOTER), ("author", "name", AUTHOR_NAME)):
        if key in data.get(part, {}):
            data[part][key] = truncate(data[part][key], limit)
    if "title" in data:
        data["title"] = truncate(data["title"], TITLE)
    fields = [
        {
            **field,
            "name": truncate(field.get("name") or BLANK, FIELD_NAME),
            "value": truncate(field.get("value") or BLANK, FIELD_VALUE),
        }
        for field in data.get("fields", [])[:FIELDS]
    ]
    description = truncate(data.get("description") or "", DESCRIPTION)
    fixed = len(data.get("title", "")) + len(data.get("footer", {}).get("text", ""))
    room = EMBED_TOTAL - fixed - len(data.get("author", {}).get("name", ""))
    if len(description) + _size(fields) > room:
        keep = min(len(description), max(room - _size(fields), room // 2))
        fields = _fit_fields(fields, room - keep)
        description = truncate(description, room - _size(fields))
    data.pop("fields", None)
    data.pop("description", None)
    if fields:
        data["fields"] = fields
    if description:
        data["description"] = description
    return Embed.from_dict(data)


def _size(fields: Sequence[dict[str, Any]]) -> int:
    return sum(len(field["name"]) + len(field["value"]) for field in fields)


def _fit_fields(fields: Sequence[dict[str, Any]], room: int) -> list[dict[str, Any]]:
    """The leading fields that fit in ``room`` characters; the first that does not is shortened
    when its name and at least one character of value fit, and the rest are dropped."""
    kept: list[dict[str, Any]] = []
    used = 0
    for field in fields:
        size = len(field["name"]) + len(field["value"])
        if used + size <= room:
            kept.append(field)
            used += size
            continue
        space = room - used - len(field["name"])
        if space >= 1:
            kept.append({**field, "value": truncate(field["value"], space)})
        break
    return kept


def paginate(lines: Iterable[str], limit: int = DESCRIPTION) -> list[str]:
    """Join ``lines`` into pages of at most ``limit`` characters, breaking only between lines.

    A line longer than a page is truncated; blank lines at a page break are dropped, so no page
    starts or ends blank.  No lines (or only blank ones) give no pages.
    """
    pages: list[list[str]] = []
    size = 0
    for raw in lines:
        line = truncate(raw, limit)
        if pages and size + 1 + len(line) <= limit:
            pages[-1].append(line)
            size += 1 + len(line)
        elif line.strip():
            pages.append([line])
            size = len(line)
    return [text for text in ("\n".join(page).rstrip() for page in pages) if text]


def section_embeds(
    lines: Iterable[str], *, title: str, colour: Colour, empty: str = BLANK
) -> list[Embed]:
    """One embed per page of ``lines``; later pages are titled "(continued)".  With no lines,
    one embed that says ``empty``."""
    pages = paginate(lines) or [empty]
    return [
        Embed(
            title=truncate(title if index == 0 else f"{title} (continued)", TITLE),
            description=page,
            colour=colour,
        )
        for index, page in enumerate(pages)
    ]


def batch_embeds(embeds: Iterable[Embed]) -> list[list[Embed]]:
    """Group embeds, in order, into messages of at most 10 embeds and 6000 characters; each
    embed is made to fit first.  Send one message per group."""
    messages: list[list[Embed]] = []
    total = 0
    for embed in map(fit_embed, embeds):
        if not messages or len(messages[-1]) == EMBEDS or total + len(embed) > EMBED_TOTAL:
            messages.append([])
            total = 0
        messages[-1].append(embed)
        total += len(embed)
    return messages
