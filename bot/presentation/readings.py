"""Readings: a quest's reading list and library search results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from discord import Embed

from bot.content.schema import LibraryEntry, Quest, ReadingRef
from bot.presentation import style
from bot.presentation.limits import EMBED_TOTAL, section_embeds, truncate
from bot.presentation.markdown import one_block
from bot.presentation.safety import no_pings
from bot.presentation.wording import plural

ENTRY_CHARS = 1500  # one result may not crowd out the rest
RESULT_CHARS = EMBED_TOTAL - 1500  # leaves room for titles and the footer in one message


def link(label: str, url: str) -> str:
    """A Markdown link whose label and URL cannot break out of the brackets."""
    label = label.replace("[", "(").replace("]", ")")
    return f"[{label}]({url.replace('(', '%28').replace(')', '%29')})"


def entry_headline(entry: LibraryEntry) -> str:
    """``**[Title](url)** · post · free``: one line that identifies a reading."""
    return f"**{link(entry.title, entry.url)}** · {entry.kind} · {entry.cost}"


def reading_line(reading: ReadingRef, library: Mapping[str, LibraryEntry]) -> str:
    """A quest's reading with its per-quest note; a ref the library no longer has (a moderator's
    quest can outlive a library entry) is shown by id rather than failing."""
    entry = library.get(reading.ref)
    headline = entry_headline(entry) if entry else f"**{reading.ref}** (no longer in the library)"
    return no_pings(f"{headline}\n{one_block(reading.note)}")


def readings_embeds(quest: Quest, library: Mapping[str, LibraryEntry]) -> list[Embed]:
    """``/readings``: each reading with who wrote it, why read it and what this quest wants."""
    lines: list[str] = []
    for reading in quest.readings:
        entry = library.get(reading.ref)
        if entry is None:
            lines.append(reading_line(reading, library))
        else:
            lines += [
                entry_headline(entry),
                f"by {', '.join(entry.authors)}",
                f"*Why read it:* {one_block(entry.why)}",
                f"*For this quest:* {one_block(reading.note)}",
            ]
        lines.append("")
    return section_embeds(
        map(no_pings, lines),
        title=f"📚 Readings for {quest.title}",
        colour=style.LIBRARY,
        empty="This quest has no readings.",
    )


def library_embeds(
    entries: Sequence[LibraryEntry],
    *,
    cited_by: Mapping[str, Sequence[str]],
    query: str | None,
    kind: str | None,
) -> list[Embed]:
    """``/library`` results as embeds that fit one message; matches beyond that are counted in
    the footer so the learner knows to narrow the search."""
    lines: list[str] = []
    used = shown = 0
    for entry in entries:
        block = truncate(no_pings(_entry_block(entry, cited_by.get(entry.id, ()))), ENTRY_CHARS)
        if used + len(block) > RESULT_CHARS:
            break
        lines += [block, ""]
        used += len(block) + 2
        shown += 1
    terms = [f"“{truncate(' '.join(query.split()), 100)}”"] if query else []
    terms += [f"({kind})"] if kind else []
    searched = no_pings(" ".join(terms))
    found = plural(len(entries), "reading")
    embeds = section_embeds(
        lines,
        title=f"📚 Library {searched}: {found}" if searched else f"📚 Library: {found}",
        colour=style.LIBRARY,
        empty=f"Nothing in the library matches {searched or 'that'}.",
    )
    if shown < len(entries):
        embeds[-1].set_footer(
            text=f"Showing {shown}; {len(entries) - shown} more not shown. Narrow the search."
        )
    return embeds


def _entry_block(entry: LibraryEntry, cited_by: Sequence[str]) -> str:
    lines = [
        entry_headline(entry),
        f"by {', '.join(entry.authors)}",
        one_block(entry.why),
        f"Tags: {', '.join(entry.tags)}" if entry.tags else "",
        f"Cited by: {', '.join(f'`{quest}`' for quest in cited_by)}" if cited_by else "",
    ]
    return "\n".join(line for line in lines if line)
