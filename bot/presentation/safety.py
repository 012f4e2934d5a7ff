"""Text from learners and moderators (quest YAML, display names, grader feedback quoting
submissions) must never ping a whole server or a role.

The bot also sends with ``allowed_mentions`` off for everyone and roles; breaking the mention in
the text as well is defence in depth, and keeps a mention from at least *looking* like a ping.
"""

from __future__ import annotations

import re

from discord.utils import escape_markdown

ZERO_WIDTH_SPACE = "\u200b"

# "@everyone" / "@here" (any case: cheaper than knowing which spellings Discord honours) and role
# mentions "<@&123>"; the zero-width space goes right after the "@".
_PING = re.compile(r"@(?=everyone|here)|<@(?=&\d+>)", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")


def no_pings(text: str) -> str:
    """``text`` with each ``@everyone``, ``@here`` and ``<@&role>`` broken by a zero-width space."""
    return _PING.sub(lambda match: match.group() + ZERO_WIDTH_SPACE, text)


def safe_name(name: str) -> str:
    """A display name fit to put inside bold text on one line: Markdown escaped, whitespace
    (newlines included) collapsed, pings broken."""
    return no_pings(escape_markdown(_WHITESPACE.sub(" ", name).strip()))
