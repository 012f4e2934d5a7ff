"""Safe YAML loading that remembers where every value came from.

Pydantic reports errors by data path (``tasks[0].xp``); a moderator needs a
line number.  We compose the node tree with ``yaml.SafeLoader``, record the
position of every mapping key and sequence item, then construct the data from
the same nodes, so the two always agree.  Duplicate keys are caught here
because SafeLoader would otherwise silently keep the last one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from bot.content.problems import Problem

#: One step into the data: a mapping key or a sequence index.
PathPart = str | int
DataPath = tuple[PathPart, ...]

SYNTAX_HINT = "check indentation, colons and quoting at this spot"


def format_path(path: DataPath) -> str:
    """Render a data path the way the checker's messages show it, e.g. ``tasks[0].xp``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(top level)"


@dataclass(frozen=True)
class YamlDocument:
    """Parsed data plus the 1-based line of each path inside it.

    ``aliased`` documents used YAML aliases: they are refused, and only their
    top level may be read (to learn the ids they declare), never walked.
    """

    file: str
    data: Any
    lines: Mapping[DataPath, int]
    aliased: bool = False

    def line_of(self, path: DataPath) -> int:
        return _line_near(self.lines, path)

    def problem(self, path: DataPath, message: str, hint: str) -> Problem:
        return Problem(self.file, self.line_of(path), message, hint)


def parse_yaml(text: str, file: str) -> tuple[YamlDocument | None, list[Problem]]:
    """Parse one YAML document; the document is None when nothing usable was read."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, [_empty_problem(file)]
        lines: dict[DataPath, int] = {}
        aliases: list[int] = []
        problems = list(_walk(root, (), lines, file, set(), aliases))
        problems += [_alias_problem(file, line) for line in sorted(set(aliases))]
        data = loader.construct_document(root)
        if data is None:
            return None, [_empty_problem(file)]
    except yaml.MarkedYAMLError as exc:
        return None, [_syntax_problem(exc, file)]
    except yaml.YAMLError as exc:
        return None, [Problem(file, 1, f"cannot read YAML: {exc}", SYNTAX_HINT)]
    except RecursionError:  # PyYAML composes recursively; a hostile upload must not crash us
        return None, [Problem(file, 1, "YAML is nested too deeply", "flatten the structure")]
    finally:
        loader.dispose()
    return YamlDocument(file, data, lines, aliased=bool(aliases)), problems


def _line_near(lines: Mapping[DataPath, int], path: DataPath) -> int:
    """Line of ``path``, or of its nearest recorded ancestor when the path itself is
    absent (a missing field is reported where its parent mapping starts)."""
    for end in range(len(path), -1, -1):
        line = lines.get(path[:end])
        if line is not None:
            return line
    return 1


def _syntax_problem(exc: yaml.MarkedYAMLError, file: str) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    message = exc.problem or "invalid YAML"
    if exc.context:
        message += f" ({exc.context})"
    if mark is None:
        return Problem(file, 1, message, SYNTAX_HINT)
    return Problem(file, mark.line + 1, message, SYNTAX_HINT, column=mark.column + 1)


def _empty_problem(file: str) -> Problem:
    return Problem(file, 1, "file is empty", "write the YAML content or delete the file")


def _alias_problem(file: str, line: int) -> Problem:
    return Problem(
        file, line, "YAML aliases (*name) are not supported", "write the value out in full"
    )


def _walk(
    node: yaml.Node,
    path: DataPath,
    lines: dict[DataPath, int],
    file: str,
    seen: set[int],
    aliases: list[int],
) -> Iterator[Problem]:
    """Record positions below ``node`` and yield duplicate-key problems.

    A node met twice is an alias.  Aliases are refused (their lines go to
    ``aliases``): they can make the data cyclic or exponentially large to walk,
    and quest files have no need for them.
    """
    if id(node) in seen:
        aliases.append(_line_near(lines, path))
        return
    seen.add(id(node))
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        first_seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key, line = key_node.value, key_node.start_mark.line + 1
            if key in first_seen:
                where = f" in {format_path(path)}" if path else ""
                yield Problem(
                    file,
                    line,
                    f"duplicate key `{key}`{where} (first at line {first_seen[key]})",
                    "keep one of them; YAML would silently use only the last",
                )
                continue
            first_seen[key] = line
            lines[(*path, key)] = line
            yield from _walk(value_node, (*path, key), lines, file, seen, aliases)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _walk(item, (*path, index), lines, file, seen, aliases)
