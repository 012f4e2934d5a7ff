"""Find text that would ping people when the bot posts it.

The bot never pings; allowed_mentions guards at send time, but content that
contains a mention is still a mistake, so the checker flags it at its line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from bot.content.problems import Problem
from bot.content.yaml_source import DataPath, YamlDocument, format_path

_MENTION = re.compile(r"@everyone|@here|<@[!&]?\d+>")


def mention_problems(doc: YamlDocument) -> list[Problem]:
    """One problem per text value containing ``@everyone``, ``@here`` or ``<@…>``."""
    problems = []
    for path, text in _strings(doc.data, ()):
        found = _MENTION.search(text)
        if found:
            problems.append(
                doc.problem(
                    path,
                    f"`{format_path(path)}` would ping: it contains {found.group()}",
                    "remove the mention; the bot never pings",
                )
            )
    return problems


def _strings(node: Any, path: DataPath) -> Iterator[tuple[DataPath, str]]:
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, (*path, str(key)))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _strings(item, (*path, index))
