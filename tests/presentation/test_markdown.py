"""Hard-wrapped YAML Markdown is reflowed into one line per paragraph or list item."""

from __future__ import annotations

from bot.presentation.markdown import one_block, reflow


def test_paragraphs_and_list_items_become_single_lines() -> None:
    text = (
        "First paragraph\nwraps here.\n\n"
        "- item one\n  continues\n- item two\n"
        "1. step\n2) other\n> quoted\n# heading\n| a | b |\n| c | d |\n"
    )
    assert reflow(text) == [
        "First paragraph wraps here.",
        "",
        "- item one continues",
        "- item two",
        "1. step",
        "2) other",
        "> quoted",
        "# heading",
        "| a | b |",
        "| c | d |",
    ]


def test_fenced_code_is_kept_verbatim() -> None:
    text = "Run:\n```py\nx = 1\n    y = 2\n\n```\nthen\nstop"
    assert reflow(text) == ["Run:", "```py", "x = 1", "    y = 2", "", "```", "then stop"]


def test_one_block_joins_the_lines() -> None:
    assert one_block("a\nb\n\nc\n") == "a b\n\nc"
