"""Why intake said no: typed facts, never words.

Intake decides every rule of a submission, once: the kind of file and its size
(``submission_input``), the task (``accept.find_build_task``), the member's pace
(``accept.queue_submission``) and a regrade's preconditions (``regrade``).  A rule that says
no raises ``Refused`` carrying one ``Refusal``: a frozen dataclass of the facts a reply needs.
The front ends check nothing themselves; each words a refusal its own way: the cogs
(``bot.exts.refusal_replies``), the API (``bot.http.api_routes``: a status and a JSON error),
``brrrbot grade`` (``bot.worker.local``), most of them through the shared
``bot.presentation.refusal_words``.  Only the leaf classes are raised; the classes above them
group what one use case may raise (``SubmitRefusal``: ``accept.submit``).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.content.schema import TaskKind
from bot.jobs.job_spec import SourceKind


@dataclass(frozen=True)
class Refusal:
    """Why a submission (or a regrade) was refused; only the leaf classes are raised."""


class Refused(Exception):
    """A rule of intake said no; ``refusal`` says which and why.

    The facts travel in a frozen dataclass rather than as the exception's own fields:
    ``contextlib`` assigns ``__traceback__`` to an exception leaving a generator-based ``with``
    block, which a frozen dataclass exception refuses (``FrozenInstanceError``).
    """

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal)
        self.refusal = refusal


@dataclass(frozen=True)
class SubmitRefusal(Refusal):
    """What ``accept.submit`` may refuse."""


# the file ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class UploadRefusal(SubmitRefusal):
    """The upload itself cannot be graded; ``filename`` is as the member named it."""

    filename: str


@dataclass(frozen=True)
class WrongFileKind(UploadRefusal):
    """Not a ``.py`` or ``.ipynb`` file; ``suffix`` is the one it has, in lower case ("": none)."""

    suffix: str


@dataclass(frozen=True)
class TooLarge(UploadRefusal):
    """Over the limit for its kind of file (known before the download, or while reading)."""

    size: int
    limit: int
    kind: SourceKind


@dataclass(frozen=True)
class EmptyFile(UploadRefusal):
    """Zero bytes."""


@dataclass(frozen=True)
class OnlyWhitespace(UploadRefusal):
    """Text, but nothing in it."""


@dataclass(frozen=True)
class NulByte(UploadRefusal):
    """A NUL byte at ``offset``: a binary file."""

    offset: int


@dataclass(frozen=True)
class ControlBytes(UploadRefusal):
    """``percent`` of the bytes are control characters: a binary file."""

    percent: int


@dataclass(frozen=True)
class NotUtf8(UploadRefusal):
    """``byte`` at ``offset`` (on ``line``) does not decode as UTF-8."""

    byte: int
    offset: int
    line: int


@dataclass(frozen=True)
class NotANotebook(UploadRefusal):
    """An ``.ipynb`` that cannot be converted; ``problem`` is the notebook reader's diagnosis."""

    problem: str


@dataclass(frozen=True)
class CodeTooLarge(UploadRefusal):
    """A notebook whose code cells add up to more than the limit for code."""

    size: int
    limit: int


# the task ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskRefusal(SubmitRefusal):
    """The task named cannot take code; ``ref`` is as the member gave it."""

    ref: str


@dataclass(frozen=True)
class UnknownTask(TaskRefusal):
    """No such task on the map (or not a ``QUEST/TASK`` at all)."""


@dataclass(frozen=True)
class NotABuildTask(TaskRefusal):
    """A task of another ``kind`` (quiz, exercise, reading): not graded code."""

    kind: TaskKind


@dataclass(frozen=True)
class UnknownGrader(TaskRefusal):
    """The task names a ``grader`` this bot does not have (a broken install)."""

    grader: str


# the member's pace ------------------------------------------------------------------------


@dataclass(frozen=True)
class RateLimited(SubmitRefusal):
    """Refused for now: the same upload is accepted after ``retry_after_s`` seconds or so."""

    retry_after_s: int


@dataclass(frozen=True)
class InFlight(RateLimited):
    """The member's submission ``submission_id`` is still queued or being graded."""

    submission_id: int


@dataclass(frozen=True)
class HourlyLimit(RateLimited):
    """``count`` submissions in the last hour, and the limit is ``limit``."""

    count: int
    limit: int


# /admin regrade ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RegradeRefusal(Refusal):
    """What ``regrade`` may refuse, about submission ``submission_id``."""

    submission_id: int


@dataclass(frozen=True)
class NoSuchSubmission(RegradeRefusal):
    """Not a submission of this server."""


@dataclass(frozen=True)
class AlreadyBeingGraded(RegradeRefusal):
    """Its job is queued or running."""


@dataclass(frozen=True)
class TaskOffTheMap(RegradeRefusal):
    """Its task ``ref`` is no longer on the server's map."""

    ref: str


@dataclass(frozen=True)
class CannotRegrade(RegradeRefusal):
    """The stored upload or its task fails a rule of ``/submit`` today: ``reason``."""

    reason: SubmitRefusal


def leaf_kinds(base: type[Refusal] = Refusal) -> list[type[Refusal]]:
    """The refusals that are raised under ``base``: its subclasses without subclasses."""
    below = base.__subclasses__()
    if not below:
        return [base]
    return [leaf for cls in below for leaf in leaf_kinds(cls)]
