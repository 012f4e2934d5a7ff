"""Every front end has words for every refusal intake can raise, and they are today's words.

The kinds are read off the class hierarchy of ``bot.intake.refusals`` (``leaf_kinds``), never
listed by hand, and each is built with every value its literal fields allow: a new kind of
refusal without words in the cogs, the shared words or ``brrrbot grade``, or without a status
in the API, fails here rather than in front of a member (or as a 500).
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Literal, get_args, get_origin, get_type_hints

import pytest

from bot.exts.refusal_replies import refusal_reply
from bot.http.api_routes import REFUSAL_STATUS, refusal_error
from bot.http.openapi import document
from bot.intake.refusals import (
    AlreadyBeingGraded,
    CannotRegrade,
    HourlyLimit,
    InFlight,
    NoSuchSubmission,
    NotABuildTask,
    NulByte,
    RateLimited,
    Refusal,
    SubmitRefusal,
    TaskOffTheMap,
    TaskRefusal,
    TooLarge,
    UnknownGrader,
    UnknownTask,
    UploadRefusal,
    WrongFileKind,
    leaf_kinds,
)
from bot.presentation.refusal_words import refusal_words
from bot.worker.local import refusal_line

KIB = 1024


def samples(kind: type[Refusal]) -> Iterator[Refusal]:
    """``kind`` built with every combination of its literal fields' values (one value for the
    others), so words that depend on a literal (a task's kind, a file's kind) are all tried."""
    hints = get_type_hints(kind)
    fields = dataclasses.fields(kind)
    choices = [_values(hints[field.name], field.name) for field in fields]
    for values in itertools.product(*choices):
        yield kind(**{field.name: value for field, value in zip(fields, values, strict=True)})


def _values(hint: Any, name: str) -> list[Any]:
    if get_origin(hint) is Literal:
        return list(get_args(hint))
    if hint is str:
        return ["solution.py" if name == "filename" else f"some-{name}"]
    if hint is int:
        return [300 * KIB]
    if isinstance(hint, type) and issubclass(hint, Refusal):
        return [next(samples(leaf)) for leaf in leaf_kinds(hint)]
    raise AssertionError(f"no sample value for a field {name}: {hint!r}; teach _values")


def unworded(kinds: list[type[Refusal]], words: Callable[[Refusal], object]) -> list[str]:
    """The samples of ``kinds`` that ``words`` cannot word (it raises, or says nothing)."""
    missing = []
    for refusal in (sample for kind in kinds for sample in samples(kind)):
        try:
            said = words(refusal)
        except (TypeError, KeyError) as exc:
            missing.append(f"{refusal!r}: {exc!r}")
            continue
        if not said:
            missing.append(f"{refusal!r}: nothing said")
    return missing


ALL = leaf_kinds()
OF_SUBMIT = leaf_kinds(SubmitRefusal)
#: what ``brrrbot grade`` can meet: the file's rules and the task's, never a pace or a regrade
OF_GRADE = leaf_kinds(UploadRefusal) + leaf_kinds(TaskRefusal)


def test_the_kinds_are_the_leaves_of_the_hierarchy() -> None:
    assert {InFlight, HourlyLimit, WrongFileKind, CannotRegrade} <= set(ALL)
    assert not {Refusal, SubmitRefusal, UploadRefusal, TaskRefusal, RateLimited} & set(ALL)
    assert set(OF_SUBMIT) < set(ALL) and CannotRegrade not in OF_SUBMIT
    assert len(ALL) == len(set(ALL)) >= 18


def test_a_new_kind_is_enumerated_and_found_without_words() -> None:
    """The enumeration is the hierarchy's, so a kind added tomorrow is checked too."""

    @dataclasses.dataclass(frozen=True)
    class Tomorrow(UploadRefusal):
        pass

    try:
        assert Tomorrow in leaf_kinds(SubmitRefusal)
        assert unworded([Tomorrow], refusal_words)
        assert unworded([Tomorrow], refusal_reply)
        assert unworded([Tomorrow], refusal_error)
        assert unworded([Tomorrow], refusal_line)
    finally:
        del Tomorrow
        gc.collect()
    assert "Tomorrow" not in {kind.__name__ for kind in leaf_kinds()}


def test_every_refusal_has_shared_words() -> None:
    assert unworded(ALL, refusal_words) == []


def test_the_cogs_word_every_refusal() -> None:
    assert unworded(ALL, refusal_reply) == []


def test_brrrbot_grade_words_every_refusal_it_can_meet() -> None:
    assert unworded(OF_GRADE, refusal_line) == []


def test_the_api_answers_every_refusal_of_submit_with_a_documented_status() -> None:
    assert unworded(OF_SUBMIT, refusal_error) == []
    assert set(REFUSAL_STATUS) == set(OF_SUBMIT)  # nothing stale either
    documented = document(2 * KIB * KIB)["paths"]["/api/v1/submissions"]["post"]["responses"]
    for refusal in (sample for kind in OF_SUBMIT for sample in samples(kind)):
        error = refusal_error(refusal)
        assert str(error.status) in documented and 400 <= error.status < 500, refusal
        assert error.code and str(error)
        retry = error.headers.get("Retry-After")
        assert (
            (retry == str(refusal.retry_after_s))
            if isinstance(refusal, RateLimited)
            else (retry is None)
        ), refusal


# the words members see today, per front end ---------------------------------------------------


@pytest.mark.parametrize(
    ("refusal", "reply"),
    [
        (
            WrongFileKind("notes.txt", ".txt"),
            "`notes.txt` is not a .py or .ipynb file; attach your solution as a Python file or a "
            "Jupyter notebook.",
        ),
        (
            TooLarge("big.ipynb", 2200 * KIB, 2048 * KIB, "ipynb"),
            "`big.ipynb` is 2.1 MiB; the limit is 2 MiB.",
        ),
        (
            UnknownTask("go-brrrr/nope"),
            "There is no task `go-brrrr/nope` in this server's map. Pick one from the list as you "
            "type, or see `/quests`.",
        ),
        (
            NotABuildTask("go-brrrr/shape-predictions", "quiz"),
            "`go-brrrr/shape-predictions` is a quiz task: use `/answer` for it.",
        ),
        (
            NotABuildTask("go-brrrr/zero-to-hero", "exercise"),
            "`go-brrrr/zero-to-hero` is a exercise task: use `/done` for it.",
        ),
        (
            InFlight(retry_after_s=30, submission_id=12),
            "Your submission #12 is still being graded; one at a time, please. Its verdict will "
            "arrive here shortly.",
        ),
        (
            HourlyLimit(retry_after_s=40 * 60 - 5, count=20, limit=20),
            "You have submitted 20 times in the last hour (the limit is 20); try again in 40 min.",
        ),
        (NoSuchSubmission(999), "There is no submission #999 in this server."),
        (AlreadyBeingGraded(7), "Submission #7 is already being graded."),
        (
            TaskOffTheMap(7, "matmul-again/three-ways"),
            "Submission #7 is for `matmul-again/three-ways`, which is no longer on this server's "
            "map, so there is nothing to grade it against.",
        ),
        (
            CannotRegrade(7, NotABuildTask("matmul-again/three-ways", "exercise")),
            "Submission #7 cannot be graded again: `matmul-again/three-ways` is an exercise task, "
            "not graded code.",
        ),
        (
            CannotRegrade(7, TooLarge("a.py", 300 * KIB, 256 * KIB, "py")),
            "Submission #7 cannot be graded again: `a.py` is 300 KiB; the limit for .py files is "
            "256 KiB.",
        ),
        (
            UnknownGrader("matmul-again/three-ways", "warp_drive"),
            "`matmul-again/three-ways` needs grader `warp_drive`, which this bot does not know; "
            "please tell a moderator.",
        ),
        (
            NulByte("blob.py", 0),
            "`blob.py` looks like a binary file, not text (a NUL byte at offset 0).",
        ),
    ],
)
def test_the_cogs_words(refusal: Refusal, reply: str) -> None:
    assert refusal_reply(refusal) == reply


def test_the_cogs_quote_a_long_name_shortened() -> None:
    reply = refusal_reply(WrongFileKind("x" * 200 + ".txt", ".txt"))
    assert reply.startswith("`" + "x" * 79 + "…`")


@pytest.mark.parametrize(
    ("refusal", "status", "code", "message"),
    [
        (
            WrongFileKind("notes.txt", ".txt"),
            415,
            "unsupported_media_type",
            "`notes.txt` is not a .py or .ipynb file",
        ),
        (TooLarge("a.py", 5000, 4096, "py"), 413, "too_large", "`a.py` is over the limit of 4 KiB"),
        (
            UnknownTask("go-brrrr/no-such-task"),
            422,
            "unprocessable",
            "there is no task `go-brrrr/no-such-task` in this server's map",
        ),
        (
            NotABuildTask("go-brrrr/shape-predictions", "quiz"),
            422,
            "unprocessable",
            "`go-brrrr/shape-predictions` is a quiz task, not graded code",
        ),
        (
            InFlight(retry_after_s=30, submission_id=3),
            429,
            "rate_limited",
            "Your submission #3 is still being graded; one at a time, please. Its verdict will "
            "arrive here shortly.",
        ),
        (
            NulByte("blob.py", 4),
            422,
            "unprocessable",
            "`blob.py` looks like a binary file, not text (a NUL byte at offset 4).",
        ),
    ],
)
def test_the_apis_answers(refusal: Refusal, status: int, code: str, message: str) -> None:
    error = refusal_error(refusal)
    assert (error.status, error.code, str(error)) == (status, code, message)


def test_brrrbot_grades_words() -> None:
    assert refusal_line(UnknownTask("go-brrrr/nope")) == (
        "unknown task 'go-brrrr/nope'; `brrrbot grade --list` shows the gradable tasks"
    )
    assert refusal_line(NotABuildTask("go-brrrr/shape-predictions", "quiz")) == (
        "go-brrrr/shape-predictions is a quiz task, not graded code; `brrrbot grade --list` "
        "shows the gradable tasks"
    )
    assert refusal_line(TooLarge("dir/big.ipynb", 3 << 20, 2 << 20, "ipynb")) == (
        "`big.ipynb` is 3 MiB; the limit for .ipynb files is 2 MiB. Clear the outputs "
        "(Edit > Clear All Outputs) and save."
    )
