"""Library search matches title, authors and tags; it imports no discord."""

from __future__ import annotations

import subprocess
import sys

from bot.content import Content
from bot.presentation.search import search_library
from tests.support import REPO


def ids(content: Content, query: str | None, kind: str | None = None) -> list[str]:
    return [entry.id for entry in search_library(content.library, query, kind)]


def test_matches_title_author_and_tag_ignoring_case(content: Content) -> None:
    assert "pytorch-internals" in ids(content, "PyTorch INTERNALS")
    assert ids(content, "horace he") == ["brrr-intro"]
    assert "brrr-intro" in ids(content, "fusion")  # a tag


def test_every_word_must_match(content: Content) -> None:
    assert "brrr-intro" in ids(content, "horace fusion")
    assert ids(content, "horace transformers") == []


def test_kind_filters_and_empty_query_lists_all_in_library_order(content: Content) -> None:
    assert ids(content, None) == list(content.library)
    assert ids(content, "  ") == list(content.library)
    posts = ids(content, None, "post")
    assert posts and all(content.library[entry].kind == "post" for entry in posts)
    assert ids(content, "zero to hero", "post") == []


def test_search_does_not_import_discord() -> None:
    code = (
        "import bot.presentation.search, sys; "
        "assert 'discord' not in sys.modules and 'torch' not in sys.modules"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
