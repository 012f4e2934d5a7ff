"""Intake's refusals (``bot.intake.refusals``) as the cogs answer them.

The cogs check nothing themselves: ``/submit``, "Submit solution" and ``/admin regrade`` call
intake and let its ``Refused`` through, and ``bot.exts.error_replies`` answers it, ephemerally,
with ``refusal_reply``.  The words are the shared ones (``bot.presentation.refusal_words``)
except where a member in Discord is told something else: a file refused before its download,
and a task that is not on the map or not a build task (worded as ``/answer`` and ``/done``
word theirs).
"""

from __future__ import annotations

from bot.exts.common import unknown_task_text, wrong_kind_text
from bot.intake.refusals import NotABuildTask, Refusal, TooLarge, UnknownTask, WrongFileKind
from bot.intake.submission_input import format_size
from bot.presentation.limits import truncate
from bot.presentation.refusal_words import refusal_words


def refusal_reply(refusal: Refusal) -> str:
    """The ephemeral reply to ``refusal``."""
    match refusal:
        case WrongFileKind(filename=name):
            return (
                f"`{truncate(name, 80)}` is not a .py or .ipynb file; attach your solution as "
                "a Python file or a Jupyter notebook."
            )
        case TooLarge(filename=name, size=size, limit=limit):
            return (
                f"`{truncate(name, 80)}` is {format_size(size)}; the limit is {format_size(limit)}."
            )
        case UnknownTask(ref=ref):
            return unknown_task_text(ref)
        case NotABuildTask(ref=ref, kind=kind):
            return wrong_kind_text(ref, kind)
    return refusal_words(refusal)
