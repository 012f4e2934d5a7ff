"""No text the bot shows can ping a whole server or a role."""

from __future__ import annotations

import re

import pytest

from bot.presentation.safety import ZERO_WIDTH_SPACE, no_pings, safe_name

PING = re.compile(r"@everyone|@here|<@&\d+>", re.IGNORECASE)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hi @everyone!", f"hi @{ZERO_WIDTH_SPACE}everyone!"),
        ("@here look", f"@{ZERO_WIDTH_SPACE}here look"),
        ("ping <@&1234> now", f"ping <@{ZERO_WIDTH_SPACE}&1234> now"),
        ("@Everyone and @HERE", f"@{ZERO_WIDTH_SPACE}Everyone and @{ZERO_WIDTH_SPACE}HERE"),
        ("thanks <@42>", "thanks <@42>"),  # one user: allowed_mentions decides
        ("mail me at ada@example.com", "mail me at ada@example.com"),
        ("@@everyone", f"@@{ZERO_WIDTH_SPACE}everyone"),
    ],
)
def test_no_pings(text: str, expected: str) -> None:
    assert no_pings(text) == expected


def test_no_pings_leaves_no_mention_and_is_idempotent() -> None:
    text = "@everyone @here <@&1> <@&22> @everyone@here"
    once = no_pings(text)
    assert not PING.search(once)
    assert no_pings(once) == once
    assert once.replace(ZERO_WIDTH_SPACE, "") == text


def test_safe_name_escapes_markdown_joins_lines_and_breaks_pings() -> None:
    assert safe_name("**Ada**") == r"\*\*Ada\*\*"
    assert safe_name("  two\nlines\t") == "two lines"
    assert not PING.search(safe_name("@everyone"))
