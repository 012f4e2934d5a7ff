"""Read one content file end to end: YAML, positions, pings and schema.

Shared by the directory checker and ``check_quest_text`` so a quest added
through Discord gets exactly the same messages as one checked in the repo.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel

from bot.content.mentions import mention_problems
from bot.content.problems import Problem
from bot.content.schema_errors import validate_document
from bot.content.yaml_source import YamlDocument, parse_yaml

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Loaded(Generic[M]):
    """A file's outcome: ``doc`` when the YAML parsed (even if the schema failed),
    ``model`` only when it is fully valid."""

    doc: YamlDocument | None
    model: M | None
    problems: tuple[Problem, ...]


def load_text(text: str, file: str, model: type[M]) -> Loaded[M]:
    doc, problems = parse_yaml(text, file)
    if doc is None or doc.aliased:
        return Loaded(doc, None, tuple(problems))
    problems += mention_problems(doc)
    validated, schema_problems = validate_document(model, doc)
    problems += schema_problems
    return Loaded(doc, validated if not problems else None, tuple(problems))


def load_file(
    path: Path, file: str, model: type[M], hint_if_missing: str = "restore the file"
) -> Loaded[M]:
    """Like ``load_text`` but from disk; a missing or unreadable file is a problem too."""
    if not path.is_file():
        return Loaded(None, None, (Problem(file, None, "file is missing", hint_if_missing),))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        hint = "save the file as UTF-8"
        return Loaded(None, None, (Problem(file, 1, f"not UTF-8 text ({exc.reason})", hint),))
    except OSError as exc:
        hint = "check the file's permissions"
        return Loaded(None, None, (Problem(file, None, f"cannot read: {exc.strerror}", hint),))
    return load_text(text, file, model)
