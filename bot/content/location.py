"""Where the quest content is: QUESTS_DIR when set, else ./quests when it is a content
directory, else the quests shipped inside the installed package.

So a learner's ``brrrbot grade`` works from any folder of theirs, and a server keeps its own
content by pointing QUESTS_DIR at it.
"""

from __future__ import annotations

from pathlib import Path

from bot.content.loader import MAP_FILE

#: the shipped quests: ``bot/quests`` links to the repository's ``quests/``, and a wheel
#: carries them as package data
SHIPPED = Path(__file__).resolve().parent.parent / "quests"
LOCAL = Path("quests")


def content_directory(configured: Path | None) -> Path:
    """The directory to load: ``configured`` (QUESTS_DIR) wins, then ./quests, then the
    shipped quests."""
    if configured is not None:
        return configured
    if (LOCAL / MAP_FILE).is_file():
        return LOCAL
    return SHIPPED
