"""Start-up checks shared by the commands that need the quest map."""

from __future__ import annotations

from bot.config import Settings
from bot.content import Content, ContentError, load_content
from bot.errors import ConfigError


def load_content_or_fail(settings: Settings) -> Content:
    """The quest map, or a ConfigError listing every problem one per line."""
    try:
        return load_content(settings.quests_dir)
    except ContentError as exc:
        lines = "\n".join(str(problem) for problem in exc.problems)
        raise ConfigError(
            f"QUESTS_DIR {settings.quests_dir} has {len(exc.problems)} problem(s); "
            f"run `brrrbot quests check` for hints:\n{lines}"
        ) from None
