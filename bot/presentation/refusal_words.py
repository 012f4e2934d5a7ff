"""Intake's refusals (``bot.intake.refusals``) in the words a member reads.

These are the words every front end shares: the cogs, the API's error messages and
``brrrbot grade`` each override the few they say their own way and take the rest from here.
Plain text, no Discord: a file name is shown without its folders and cut at 100 characters.
"""

from __future__ import annotations

import math
from pathlib import PurePath

from bot.intake.refusals import (
    AlreadyBeingGraded,
    CannotRegrade,
    CodeTooLarge,
    ControlBytes,
    EmptyFile,
    HourlyLimit,
    InFlight,
    NoSuchSubmission,
    NotABuildTask,
    NotANotebook,
    NotUtf8,
    NulByte,
    OnlyWhitespace,
    Refusal,
    TaskOffTheMap,
    TooLarge,
    UnknownGrader,
    UnknownTask,
    UploadRefusal,
    WrongFileKind,
)
from bot.intake.submission_input import format_size

_CLEAR_OUTPUTS = " Clear the outputs (Edit > Clear All Outputs) and save."


def refusal_words(refusal: Refusal) -> str:
    """The member's message for ``refusal``; TypeError for a kind no one has worded yet."""
    if isinstance(refusal, UploadRefusal):
        return _upload_words(refusal, _shown(refusal.filename))
    match refusal:
        case UnknownTask(ref=ref):
            return f"There is no task `{ref[:100]}` in this server's map."
        case NotABuildTask(ref=ref, kind=kind):
            article = "an" if kind[0] in "aeiou" else "a"
            return f"`{ref}` is {article} {kind} task, not graded code."
        case UnknownGrader(ref=ref, grader=grader):
            return (
                f"`{ref}` needs grader `{grader}`, which this bot does not know; "
                "please tell a moderator."
            )
        case InFlight(submission_id=busy):
            return (
                f"Your submission #{busy} is still being graded; one at a time, please. "
                "Its verdict will arrive here shortly."
            )
        case HourlyLimit(count=count, limit=limit, retry_after_s=wait_s):
            return (
                f"You have submitted {count} times in the last hour (the limit is {limit}); "
                f"try again in {math.ceil(wait_s / 60)} min."
            )
        case NoSuchSubmission(submission_id=number):
            return f"There is no submission #{number} in this server."
        case AlreadyBeingGraded(submission_id=number):
            return f"Submission #{number} is already being graded."
        case TaskOffTheMap(submission_id=number, ref=ref):
            return (
                f"Submission #{number} is for `{ref}`, which is no longer on this server's map, "
                "so there is nothing to grade it against."
            )
        case CannotRegrade(submission_id=number, reason=reason):
            return f"Submission #{number} cannot be graded again: {refusal_words(reason)}"
    raise TypeError(f"no words for {refusal!r}")


def _upload_words(refusal: UploadRefusal, name: str) -> str:
    match refusal:
        case WrongFileKind(suffix=suffix):
            received = f"a {suffix} file" if suffix else "a file without an extension"
            return (
                f"`{name}` is {received}; send a Python file (.py) or a Jupyter notebook (.ipynb)."
            )
        case EmptyFile():
            return f"`{name}` is empty (0 bytes)."
        case TooLarge(size=size, limit=limit, kind=kind):
            hint = _CLEAR_OUTPUTS if kind == "ipynb" else ""
            return (
                f"`{name}` is {format_size(size)}; the limit for .{kind} files is "
                f"{format_size(limit)}.{hint}"
            )
        case OnlyWhitespace():
            return f"`{name}` contains only whitespace."
        case NulByte(offset=offset):
            return f"`{name}` looks like a binary file, not text (a NUL byte at offset {offset})."
        case ControlBytes(percent=percent):
            return (
                f"`{name}` looks like a binary file, not text ({percent}% of its bytes are "
                "control characters)."
            )
        case NotUtf8(byte=byte, offset=offset, line=line):
            return (
                f"`{name}` is not valid UTF-8: byte 0x{byte:02x} at offset {offset} "
                f"(line {line}) cannot be decoded. Save the file with UTF-8 encoding."
            )
        case NotANotebook(problem=problem):
            return f"`{name}` is not a notebook that can be graded: {problem}."
        case CodeTooLarge(size=size, limit=limit):
            return (
                f"the code cells of `{name}` add up to {format_size(size)}; the limit for code "
                f"is {format_size(limit)}."
            )
    raise TypeError(f"no words for {refusal!r}")


def _shown(filename: str) -> str:
    """A file name as these words quote it: without its folders, at most 100 characters."""
    return PurePath(filename).name[:100] or "the file"
