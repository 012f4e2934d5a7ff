"""Reflow hard-wrapped Markdown from YAML for Discord.

Quest YAML is wrapped at about 80 columns, but Discord renders every newline as a line break, so
the text would show up as ragged short lines.  Reflowing joins each paragraph and each list item
into one line; blank lines, block starts (lists, quotes, headings, tables) and fenced code stay.
"""

from __future__ import annotations

import re

_BLOCK_START = re.compile(r"\s*(?:[-*+]\s|\d+[.)]\s|>|#|\|)")
_FENCE = "```"


def reflow(text: str) -> list[str]:
    """The lines of ``text`` as Discord should show them: one per paragraph or list item."""
    lines: list[str] = []
    in_code = joinable = False
    for line in text.strip("\n").splitlines():
        if line.lstrip().startswith(_FENCE):
            in_code = not in_code
            lines.append(line)
            joinable = False
        elif in_code:
            lines.append(line)
        elif not line.strip():
            lines.append("")
            joinable = False
        elif joinable and not _BLOCK_START.match(line):
            lines[-1] = f"{lines[-1]} {line.strip()}"
        else:
            lines.append(line.rstrip())
            joinable = True
    return lines


def one_block(text: str) -> str:
    """``text`` reflowed into a single string (for notes and other short prose)."""
    return "\n".join(reflow(text))
