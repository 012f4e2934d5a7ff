"""Library search for ``/library``: plain data in, plain data out (no discord)."""

from __future__ import annotations

from collections.abc import Mapping

from bot.content.schema import LibraryEntry


def search_library(
    library: Mapping[str, LibraryEntry], query: str | None, kind: str | None
) -> list[LibraryEntry]:
    """Entries of ``kind`` (any kind when None) whose title, authors or tags contain every word of
    ``query``, ignoring case; an empty query matches all.  Library order is kept, which is the
    curated order of ``library.yaml``."""
    words = (query or "").casefold().split()
    return [
        entry
        for entry in library.values()
        if (kind is None or entry.kind == kind) and all(word in _haystack(entry) for word in words)
    ]


def _haystack(entry: LibraryEntry) -> str:
    return "\n".join((entry.title, *entry.authors, *entry.tags)).casefold()
