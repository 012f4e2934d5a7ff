"""Find the submission in a chat message, for the "Submit solution" message command.

Plain module (no discord): the cog passes the message's text and its attachments' names
and sizes, and gets back what to submit or why there is nothing to submit.

Which code counts, in this order:

1. the first ``.py`` or ``.ipynb`` attachment, in the order the message shows them (with
   several, the first is taken and the reply says so: one message, one submission);
2. else the first fenced block tagged ``python``, ``py``, ``python3`` or ``py3`` (any case);
3. else the first untagged fence (`````` ``` `````` alone): the member chose to submit this
   message, and a block without a language is how most people paste code.

A block tagged with another language (``text``, ``bash``, ``console``...) is never taken: it
is output or a command, not a solution.  Blocks with nothing but whitespace are skipped.
Validation, size limits and grading are the same as for ``/submit`` (``bot.intake.accept``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from bot.intake.submission_input import accepted_kind

#: the name a code block is submitted under (``validate_submission`` needs a .py name)
BLOCK_FILENAME = "message.py"
PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
#: Discord's fences: three backticks, an optional language word ending the first line
_FENCE = re.compile(r"```(.*?)```", re.DOTALL)
_LANGUAGE = re.compile(r"([A-Za-z0-9_+\-.#]+)[ \t]*\n")


@dataclass(frozen=True)
class AttachmentInfo:
    """What the message says about one attachment, before anything is downloaded."""

    filename: str
    size: int


@dataclass(frozen=True)
class AttachedCode:
    """Submit the attachment at ``index``: the cog downloads it at once (URLs expire)."""

    index: int
    filename: str
    size: int
    note: str | None = None  # why this one, when the message has several


@dataclass(frozen=True)
class BlockCode:
    """Submit the text of a fenced code block, as ``BLOCK_FILENAME``."""

    data: bytes
    lines: int
    filename: str = BLOCK_FILENAME


@dataclass(frozen=True)
class NoCode:
    """Nothing to submit; ``message`` tells the member what the message lacks."""

    message: str


MessageCode = AttachedCode | BlockCode | NoCode


def find_code(content: str, attachments: Sequence[AttachmentInfo]) -> MessageCode:
    """The submission in a message with ``content`` and ``attachments``, or why there is none."""
    code_files = [
        (index, info)
        for index, info in enumerate(attachments)
        if accepted_kind(info.filename) is not None
    ]
    if code_files:
        index, first = code_files[0]
        note = None
        if len(code_files) > 1:
            note = (
                f"That message has {len(code_files)} code files; I took the first, "
                f"`{_shown(first.filename)}`. Submit the others one message at a time."
            )
        return AttachedCode(index, first.filename, first.size, note)
    blocks = _blocks(content)
    tagged = [code for language, code in blocks if language in PYTHON_TAGS]
    untagged = [code for language, code in blocks if not language]
    for candidates in (tagged, untagged):
        for code in candidates:
            if code.strip():
                return BlockCode(code.encode("utf-8"), len(code.strip("\n").splitlines()))
    if tagged or untagged:
        return NoCode("The code block in that message is empty: put your solution inside it.")
    return NoCode(_nothing_message(blocks, attachments))


def _blocks(content: str) -> list[tuple[str, str]]:
    """Each fenced block as (language in lower case, or "" when untagged; its code)."""
    found = []
    for match in _FENCE.finditer(content):
        body = match[1]
        language = _LANGUAGE.match(body)
        if language:
            found.append((language[1].lower(), body[language.end() :]))
        else:
            found.append(("", body.removeprefix("\n")))
    return found


def _nothing_message(blocks: list[tuple[str, str]], attachments: Sequence[AttachmentInfo]) -> str:
    """Say what the message has instead, so the member sees why it was not taken."""
    has = []
    if attachments:
        names = ", ".join(f"`{_shown(a.filename)}`" for a in attachments[:3])
        more = f" and {len(attachments) - 3} more" if len(attachments) > 3 else ""
        has.append(f"it has {names}{more}")
    other = sorted({language for language, _ in blocks})
    if other:
        has.append("its code blocks are tagged " + ", ".join(f"`{lang}`" for lang in other[:3]))
    why = f" ({'; '.join(has)})" if has else ""
    return (
        f"That message has no .py or .ipynb file and no ```python code block{why}. "
        "Attach your solution or paste it in a ```python block, then run Submit solution "
        "on that message, or use /submit."
    )


def _shown(filename: str) -> str:
    """A file name as quoted in a reply: short, and unable to break out of its backticks."""
    name = PurePath(filename).name.replace("`", "'")
    return name if len(name) <= 80 else name[:79] + "…"
