"""What a grading job carries: everything a worker needs to grade it, and nothing else.

The bot builds the spec once, when it accepts an upload (``/submit`` or a regrade), from the
server's own map, so a quest a moderator added is as gradable as a shipped one.  A worker on any
host grades from the spec alone: it reads no quest files and never validates the upload again.
Torch-free: the bot process builds it, the worker reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from bot.content.schema import BuildTask
from bot.jobs.capabilities import Requirements
from graders.declaration import Speed
from graders.registry import find
from sandbox.api import Limits

#: bumped when a field changes meaning; a worker refuses specs newer than it understands
SPEC_VERSION = 1


SourceKind = Literal["py", "ipynb"]


@dataclass(frozen=True)
class PreparedSource:
    source: str  # the Python text the sandbox runs
    kind: SourceKind
    notes: tuple[str, ...]  # what was changed on the way, e.g. dropped IPython lines
    sha256: str  # of the original bytes


class SpecProblem(StrEnum):
    """Why stored job data is no spec this code can read."""

    MISSING = "missing"  # the job was queued before jobs carried one
    TOO_NEW = "too new"  # written by a newer bot than this code
    MALFORMED = "malformed"


@dataclass(frozen=True)
class UnreadableSpec:
    """A job's stored spec that could not be read: the problem, and the words saying why."""

    problem: SpecProblem
    message: str


class BadSpec(ValueError):
    """Stored job data that is not a spec this worker can use; the message says why."""

    def __init__(self, unreadable: UnreadableSpec) -> None:
        super().__init__(unreadable.message)
        self.unreadable = unreadable


@dataclass(frozen=True)
class SpeedSpec:
    """A speed-ranked task's trial: which function races which reference (graders.speed),
    and whether the function is profiled after a ranked trial (advice for the learner)."""

    function: str
    reference: str
    profile: bool = True
    batch: int | None = None  # also time a batch of this many (``graders.declaration.Speed``)


@dataclass(frozen=True)
class JobSpec:
    task_ref: str  # QUEST/TASK, for the verdict
    grader: str  # the grader's name (``graders.registry``), as the quest named it
    interface: tuple[str, ...]  # the functions the grader calls
    requirements: Requirements  # what the claiming worker must have
    limits: Limits  # the sandbox limits the job runs under
    prefers_cuda: bool  # grade on a GPU when the worker has one
    filename: str  # as uploaded, for messages and tracebacks
    source: str  # the Python text the sandbox runs (a notebook already converted)
    notes: tuple[str, ...] = ()  # what preparing the upload changed, shown with the verdict
    speed: SpeedSpec | None = None  # after a pass, time it against this reference
    version: int = SPEC_VERSION

    @classmethod
    def build(
        cls, task_ref: str, task: BuildTask, prepared: PreparedSource, filename: str
    ) -> JobSpec:
        """The spec for grading ``prepared`` as ``task``; KeyError for a grader unknown here
        (content is validated against the registry, so only a broken install gets there)."""
        info = find(task.grader)
        if info is None:
            raise KeyError(task.grader)
        return cls(
            task_ref=task_ref,
            grader=task.grader,
            interface=task.function_names(),
            requirements=Requirements.of(task),
            limits=info.limits,
            prefers_cuda=info.prefers_cuda,
            filename=filename,
            source=prepared.source,
            notes=prepared.notes,
            speed=_speed_spec(task, info.speed),
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> JobSpec:
        """The spec ``to_json`` stored; BadSpec when it is missing, malformed or too new."""
        spec = read_spec(data)
        if isinstance(spec, UnreadableSpec):
            raise BadSpec(spec)
        return spec


def _speed_spec(task: BuildTask, declared: Speed | None) -> SpeedSpec | None:
    """The task's trial; the batch its grader declares when the task races the grader's own
    reference."""
    if task.speed is None:
        return None
    same = declared is not None and declared.reference == task.speed.reference
    batch = declared.batch if same and declared is not None else None
    return SpeedSpec(task.speed.function, task.speed.reference, batch=batch)


def read_spec(data: Mapping[str, Any] | None) -> JobSpec | UnreadableSpec:
    """The spec ``JobSpec.to_json`` stored, or why ``data`` is none this code can read."""
    if not data:
        return UnreadableSpec(
            SpecProblem.MISSING, "the job carries no grading spec (it was queued by an older bot)"
        )
    version = data.get("version")
    if isinstance(version, int) and version > SPEC_VERSION:
        return UnreadableSpec(
            SpecProblem.TOO_NEW,
            f"the job's spec is version {version}; this worker understands up to "
            f"{SPEC_VERSION}: upgrade the worker",
        )
    try:
        return _STORED.validate_python(dict(data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}" for e in exc.errors()
        )
        return UnreadableSpec(SpecProblem.MALFORMED, f"the job's spec is malformed ({problems})")


_STORED = TypeAdapter(JobSpec)
