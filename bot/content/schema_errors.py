"""Turn pydantic validation errors into problems a moderator can act on.

Pydantic's messages name the rule that failed; moderators need the field, the
line and what to write instead, so each error gets a located message and a hint.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from bot.content import schema
from bot.content.problems import Problem
from bot.content.schema import TASK_KINDS
from bot.content.yaml_source import DataPath, YamlDocument, format_path

#: What each field is for, with an example; used when it is missing, empty or out of range.
FIELD_HINTS: Mapping[str, str] = {
    "id": "give it a slug id, e.g. id: go-brrrr",
    "title": "give it a short title",
    "summary": "write a Markdown summary",
    "prompt": "write the Markdown prompt the learner sees",
    "phase": "name the phase from map.yaml that lists this quest",
    "readings": "list the readings, e.g. readings: [{ref: brrr-intro, note: ...}] (or [])",
    "ref": "name a library.yaml entry id",
    "note": "say why this reading is here, e.g. first assigned reading",
    "tasks": "a quest needs at least one task with id, title, kind, xp and prompt",
    "xp": "XP is a whole number above 0, e.g. xp: 20",
    "days": "days is a whole number, at least 1 (the default)",
    "kind": "use one of the listed kinds",
    "grader": "a build task names the grader that checks it, e.g. grader: matmul_three_ways",
    "interface": (
        "leave `interface` out to take the grader's functions, or list them all, "
        'e.g. interface: ["f(A, B)"]'
    ),
    "questions": "a quiz task lists its questions, each with id, prompt and answers",
    "answers": 'list every accepted answer, synonyms too, e.g. answers: ["(4, 128, 128)"]',
    "tolerance": "a relative tolerance above 0, e.g. tolerance: 0.05 for 5%",
    "authors": "list at least one author",
    "url": "use a full link starting with https://",
    "cost": "use one of the listed costs",
    "why": "say in a sentence why to read it",
    "tags": "list tags, or write tags: []",
    "entries": "list the readings under entries:",
    "phases": "list at least one phase with id, title and quests",
    "quests": "list the quest ids of this phase in order, or write quests: []",
}

#: Hints for wrong types, whichever field they occur in.
TYPE_HINTS: Mapping[str, str] = {
    "string_type": "write text; quote it if YAML reads it as a number, date or yes/no",
    "int_type": "write a whole number without quotes, e.g. 20",
    "int_parsing": "write a whole number without quotes, e.g. 20",
    "float_type": "write a number, e.g. 0.05",
    "float_parsing": "write a number, e.g. 0.05",
    "tuple_type": "write a YAML list: one `- item` per line, or [a, b]",
    "model_type": "write `field: value` lines here",
    "model_attributes_type": "write `field: value` lines here",
}

_BOUND_TYPES = ("greater_than", "greater_than_equal", "literal_error")
_ALL_FIELDS = sorted(
    {
        name
        for model in vars(schema).values()
        if isinstance(model, type) and issubclass(model, BaseModel)
        for name in model.model_fields
    }
)


M = TypeVar("M", bound=BaseModel)


def validate_document(model: type[M], doc: YamlDocument) -> tuple[M | None, list[Problem]]:
    """Validate parsed YAML against ``model``; every error becomes a located problem."""
    try:
        return model.model_validate(doc.data), []
    except ValidationError as exc:
        errors = [e for e in exc.errors() if not _counts_failed_items(e)]
        return None, [_to_problem(error, doc) for error in errors]


def _counts_failed_items(error: ErrorDetails) -> bool:
    """Pydantic also reports a list as too short when its items failed; the items'
    own errors say what is wrong, so this echo is dropped."""
    if error["type"] != "too_short" or not isinstance(error["input"], list):
        return False
    return len(error["input"]) >= error.get("ctx", {}).get("min_length", 0)


def _to_problem(error: ErrorDetails, doc: YamlDocument) -> Problem:
    path = _data_path(error["loc"], doc.data)
    subject = f"`{format_path(path)}`" if path else "the file"
    kind = error["type"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    field = next((p for p in reversed(path) if isinstance(p, str)), "")
    if kind == "union_tag_invalid":
        path = (*path, "kind")
        message = f"`{format_path(path)}` is {ctx['tag']!r}, not a task kind"
        hint = f"use one of: {', '.join(TASK_KINDS)}"
    elif kind == "union_tag_not_found":
        path = (*path, "kind")
        message = f"missing required field `{format_path(path)}`"
        hint = f"give the task a kind: {', '.join(TASK_KINDS)}"
    elif kind == "missing":
        message = f"missing required field {subject}"
        hint = FIELD_HINTS.get(field, "add the field")
    elif kind == "extra_forbidden":
        message = f"unknown field {subject}"
        hint = _extra_hint(field)
    elif kind == "too_short":
        count = ctx["min_length"]
        message = f"{subject} must list at least {count} item{'s' if count != 1 else ''}"
        hint = FIELD_HINTS.get(field, "add an item")
    elif "hint" in ctx:
        message = f"{subject}: {error['msg']}"
        hint = ctx["hint"]
    else:
        message = f"{subject} {_describe(error)}"
        hint = _type_hint(kind, field)
    return doc.problem(path, message, hint)


def _data_path(loc: tuple[int | str, ...], data: Any) -> DataPath:
    """Map a pydantic error location to a path in the YAML data.

    A discriminated union adds the tag (``tasks[0]`` + ``build``) to the
    location; that step is not in the data, so it is dropped.
    """
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part not in node and part == node.get("kind"):
            continue
        path.append(part)
        node = _child(node, part)
    return tuple(path)


def _child(node: Any, part: str | int) -> Any:
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def _extra_hint(field: str) -> str:
    close = difflib.get_close_matches(field, _ALL_FIELDS, n=1, cutoff=0.75)
    if close:
        return f"did you mean `{close[0]}`?"
    return "remove it; only documented fields are allowed"


def _type_hint(kind: str, field: str) -> str:
    if kind in _BOUND_TYPES and field in FIELD_HINTS:
        return FIELD_HINTS[field]
    return TYPE_HINTS.get(kind, f"fix the value of `{field or 'this field'}`")


def _describe(error: ErrorDetails) -> str:
    """Pydantic's rule in plain words plus the offending value, e.g.
    ``should be greater than 0 (got 0)``; YAML sequences are tuples to pydantic
    but lists to the moderator."""
    rule = _RULES.get(error["type"]) or error["msg"].removeprefix("Input ")
    rule = rule[:1].lower() + rule[1:]
    value = error["input"]
    if isinstance(value, list):
        shown = "a list"
    elif isinstance(value, dict):
        shown = "a mapping"
    else:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"{rule} (got {shown})"


_RULES: Mapping[str, str] = {
    "tuple_type": "should be a list",
    "model_type": "should be a mapping of fields",
    "model_attributes_type": "should be a mapping of fields",
}
