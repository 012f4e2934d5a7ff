"""Small wording helpers shared by the text builders."""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 day``, ``2 days``; ``many`` for irregular plurals."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"
