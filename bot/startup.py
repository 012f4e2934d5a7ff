"""Start-up checks shared by the commands that need the quest map."""

from __future__ import annotations

from bot.config import Settings
from bot.content import Content, ContentError, load_content
from bot.content.loader import WHAT_IT_HOLDS, directory_problem
from bot.content.location import content_directory
from bot.errors import ConfigError


def load_content_or_fail(settings: Settings) -> Content:
    """The quest map, or a ConfigError: one line for a directory that is not content at
    all, else every problem, one per line."""
    directory = content_directory(settings.quests_dir)
    problem = directory_problem(directory)
    if problem is not None:
        if settings.quests_dir is None:
            raise ConfigError(f"the shipped quests {directory} {problem}; reinstall brrrbot")
        raise ConfigError(f"QUESTS_DIR: {directory} {problem}; {WHAT_IT_HOLDS}")
    try:
        return load_content(directory)
    except ContentError as exc:
        lines = "\n".join(str(problem) for problem in exc.problems)
        raise ConfigError(
            f"the content in {directory} has {len(exc.problems)} problem(s); "
            f"run `brrrbot quests check` for hints:\n{lines}"
        ) from None
