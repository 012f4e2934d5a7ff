"""Pydantic schemas for quest content: the shape of every YAML file.

Models are frozen and use tuples so loaded content cannot be changed by
accident; ``extra="forbid"`` turns a misspelt field into an error instead of a
silently ignored key.  Cross-file rules (does a ref exist?) live in the checker.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, get_args
from urllib.parse import urlparse

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from bot.content.answer_matching import normalize_answer, parse_number
from graders.declaration import Signature as FunctionSignature
from graders.registry import find as find_grader

LibraryKind = Literal[
    "book", "course", "post", "podcast", "video", "reference", "repo", "exercises"
]
Cost = Literal["free", "paid", "free online, print paid"]
TaskKind = Literal["build", "quiz", "exercise", "reading"]
TASK_KINDS: tuple[str, ...] = get_args(TaskKind)

#: ids are slugs so they read well in ``QUEST/TASK`` refs and URLs.
SLUG_PATTERN = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_SLUG = re.compile(SLUG_PATTERN)
_GRADER_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _slug(value: str) -> str:
    if not _SLUG.fullmatch(value):
        raise PydanticCustomError(
            "slug",
            "`{value}` is not a slug",
            {"value": value, "hint": "use lowercase letters, digits and hyphens, e.g. go-brrrr"},
        )
    return value


def _text(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError(
            "blank", "must not be blank", {"hint": "write the text or remove the field"}
        )
    return value


def _url(value: str) -> str:
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise PydanticCustomError(
            "url",
            "`{value}` is not an http(s) link",
            {"value": value, "hint": "use a full link starting with https://"},
        )
    return value


def _grader_name(value: str) -> str:
    if not _GRADER_NAME.fullmatch(value):
        raise PydanticCustomError(
            "grader_name",
            "`{value}` is not a grader name",
            {"value": value, "hint": "grader names are snake_case, e.g. matmul_three_ways"},
        )
    return value


def _signature(value: str) -> str:
    try:
        FunctionSignature.parse(value)
    except ValueError:
        raise PydanticCustomError(
            "signature",
            "`{value}` is not a function signature",
            {"value": value, "hint": 'write it like "matmul_loops(A, B) -> Tensor"'},
        ) from None
    return value


Slug = Annotated[str, AfterValidator(_slug)]
Text = Annotated[str, AfterValidator(_text)]
Url = Annotated[str, AfterValidator(_url)]
GraderName = Annotated[str, AfterValidator(_grader_name)]
Signature = Annotated[str, AfterValidator(_signature)]


def function_name(signature: str) -> str:
    """The bare name in a signature: ``"matmul_loops(A, B) -> Tensor"`` -> ``matmul_loops``."""
    return FunctionSignature.parse(signature).name


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LibraryEntry(_Model):
    """One reading; quests cite it by ``id`` and add their own per-quest note."""

    id: Slug
    title: Text
    authors: tuple[Text, ...] = Field(min_length=1)
    kind: LibraryKind
    url: Url
    cost: Cost
    why: Text
    tags: tuple[Text, ...]


class Library(_Model):
    entries: tuple[LibraryEntry, ...]


class Phase(_Model):
    """A stretch of the curriculum; its quest order is the default daily schedule."""

    id: Slug
    title: Text
    summary: Text | None = None
    quests: tuple[Slug, ...]


class ContentMap(_Model):
    phases: tuple[Phase, ...] = Field(min_length=1)


class ReadingRef(_Model):
    ref: Slug
    note: Text


class Question(_Model):
    """A quiz question; ``tolerance`` makes it numeric (relative tolerance)."""

    model_config = ConfigDict(coerce_numbers_to_str=True)

    id: Slug
    prompt: Text
    answers: tuple[Text, ...] = Field(min_length=1)
    explanation: Text | None = None
    tolerance: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _answers_are_comparable(self) -> Question:
        for answer in self.answers:
            if self.tolerance is not None and parse_number(answer) is None:
                raise PydanticCustomError(
                    "numeric_answer",
                    "answer `{answer}` is not a number but the question has a tolerance",
                    {"answer": answer, "hint": "write numbers like 1e12 or 2.5, or drop tolerance"},
                )
            if not normalize_answer(answer):
                raise PydanticCustomError(
                    "empty_answer",
                    "answer `{answer}` is only punctuation, so nothing could match it",
                    {"answer": answer, "hint": "write the answer itself"},
                )
        return self

    def numeric_answers(self) -> tuple[float, ...]:
        """Accepted values of a numeric question (all parse: the validator checked)."""
        return tuple(v for v in map(parse_number, self.answers) if v is not None)


class _Task(_Model):
    id: Slug
    title: Text
    xp: int = Field(gt=0, strict=True)
    prompt: Text


class TaskRequirements(_Model):
    """What grading needs from a worker; a task without ``requires`` runs anywhere."""

    cuda: bool = False
    min_gpu_memory_gib: float = Field(default=0, ge=0, le=4096)

    @model_validator(mode="after")
    def _memory_needs_cuda(self) -> TaskRequirements:
        if self.min_gpu_memory_gib and not self.cuda:
            raise PydanticCustomError(
                "memory_without_cuda",
                "min_gpu_memory_gib is set but cuda is not",
                {"hint": "add `cuda: true`, or drop min_gpu_memory_gib"},
            )
        return self


def _speed_reference(value: str) -> str:
    from graders.speed import REFERENCES  # torch-free

    if value not in REFERENCES:
        raise PydanticCustomError(
            "speed_reference",
            "`{value}` is not a speed reference",
            {"value": value, "hint": "speed references are: " + ", ".join(sorted(REFERENCES))},
        )
    return value


class TaskSpeed(_Model):
    """A speed-ranked task: after a pass, ``function`` races ``reference`` (graders/speed/)."""

    function: str
    reference: Annotated[str, AfterValidator(_speed_reference)]


class BuildTask(_Task):
    """Graded code: the submission must define every function in ``interface``.

    The grader declares its functions and whether it is speed-ranked (``graders.registry``):
    a task that leaves ``interface`` or ``speed`` out takes the grader's.  A task that states
    them (as quests written before did) must agree with the grader (``bot.content.crossref``).
    """

    kind: Literal["build"]
    grader: GraderName
    #: empty only for a grader unknown here, which the cross-reference check reports
    interface: Annotated[tuple[Signature, ...], Field(min_length=1)] = ()
    requires: TaskRequirements | None = None
    speed: TaskSpeed | None = None

    @model_validator(mode="after")
    def _names_are_unique(self) -> BuildTask:
        stated = self.model_fields_set
        declared = find_grader(self.grader)
        if declared is not None:
            # the model is frozen; these are its own values, set once before anyone sees it
            if "interface" not in stated:
                object.__setattr__(self, "interface", declared.declaration.functions)
            if "speed" not in stated and declared.speed is not None:
                race = TaskSpeed(
                    function=declared.speed.function, reference=declared.speed.reference
                )
                object.__setattr__(self, "speed", race)
        names = self.function_names()
        if len(set(names)) != len(names):
            raise PydanticCustomError(
                "interface_duplicate",
                "interface names a function twice",
                {"hint": "list each function once"},
            )
        if (
            "speed" in stated
            and names
            and self.speed is not None
            and self.speed.function not in names
        ):
            raise PydanticCustomError(
                "speed_function",
                "speed.function `{value}` is not in the interface",
                {"value": self.speed.function, "hint": "race one of: " + ", ".join(names)},
            )
        return self

    def function_names(self) -> tuple[str, ...]:
        return tuple(function_name(s) for s in self.interface)


class QuizTask(_Task):
    """Graded answers, matched by ``bot.content.answer_matching``."""

    kind: Literal["quiz"]
    questions: tuple[Question, ...] = Field(min_length=1)


class ExerciseTask(_Task):
    """Self-reported practice: the learner says they did it."""

    kind: Literal["exercise"]


class ReadingTask(_Task):
    """Self-reported reading."""

    kind: Literal["reading"]


AnyTask = BuildTask | QuizTask | ExerciseTask | ReadingTask
Task = Annotated[AnyTask, Field(discriminator="kind")]


class Quest(_Model):
    """One quest file: a day (or ``days``) of readings and tasks."""

    id: Slug
    title: Text
    phase: Slug
    summary: Text
    readings: tuple[ReadingRef, ...]
    prerequisite: Slug | None = None
    days: int = Field(default=1, ge=1, strict=True)
    tasks: tuple[Task, ...] = Field(min_length=1)

    def task(self, task_id: str) -> AnyTask:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(f"quest {self.id!r} has no task {task_id!r}")
