"""Truncation, embed fitting, pagination and batching keep everything within Discord's limits."""

from __future__ import annotations

import pytest
from discord import Colour, Embed

from bot.presentation.limits import batch_embeds, fit_embed, paginate, section_embeds, truncate
from tests.presentation.discord_check import assert_sendable


def test_truncate_keeps_short_text_and_cuts_long_text_with_an_ellipsis() -> None:
    assert truncate("hello", 5) == "hello"
    assert truncate("hello world", 8) == "hello w…"
    assert truncate("hello world", 7) == "hello…"  # no space before the ellipsis
    assert truncate("hello", 0) == ""
    with pytest.raises(ValueError):
        truncate("hello", -1)


def oversized() -> Embed:
    embed = Embed(title="T" * 1000, description="D" * 10_000, colour=Colour.red())
    for index in range(40):
        embed.add_field(name=f"{index}" + "n" * 500, value=f"{index}" + "v" * 3000)
    embed.set_footer(text="F" * 5000)
    embed.set_author(name="A" * 1000)
    return embed


def test_fit_embed_makes_an_oversized_embed_valid() -> None:
    embed = fit_embed(oversized())
    data = embed.to_dict()
    assert len(data["title"]) == 256 and data["title"].endswith("…")
    assert len(data["author"]["name"]) == 256
    assert len(data["footer"]["text"]) == 2048
    assert 0 < len(data["description"]) <= 4096
    assert 0 < len(data["fields"]) <= 25
    assert all(len(f["name"]) <= 256 and 0 < len(f["value"]) <= 1024 for f in data["fields"])
    assert len(embed) <= 6000
    assert data["color"] == Colour.red().value
    assert_sendable(embeds=[embed])


def test_fit_embed_does_not_change_its_argument_or_a_valid_embed() -> None:
    big = oversized()
    before = big.to_dict()
    fit_embed(big)
    assert big.to_dict() == before
    small = Embed(title="t", description="d").add_field(name="n", value="v")
    assert fit_embed(small).to_dict() == small.to_dict()


def test_fit_embed_keeps_the_leading_fields_and_half_the_room_for_the_description() -> None:
    embed = Embed(title="t", description="D" * 4096)
    for index in range(25):
        embed.add_field(name=f"field {index}", value="v" * 1024)
    fitted = fit_embed(embed).to_dict()
    assert len(fitted["description"]) >= (6000 - 1) // 2
    names = [field["name"] for field in fitted["fields"]]
    assert names == [f"field {index}" for index in range(len(names))]
    assert len(fit_embed(embed)) <= 6000


def test_fit_embed_keeps_a_short_description_whole_when_fields_overflow() -> None:
    embed = Embed(description="intro")
    for index in range(25):
        embed.add_field(name=f"field {index}", value="v" * 1024)
    fitted = fit_embed(embed)
    assert fitted.description == "intro"
    assert len(fitted) == 6000  # the last kept field is shortened to fill the room exactly


def test_fit_embed_fills_empty_field_parts() -> None:
    embed = Embed()
    embed.add_field(name="", value="")
    assert_sendable(embeds=[fit_embed(embed)])


def test_paginate_breaks_between_lines_within_the_limit() -> None:
    lines = [f"line {index:03d} " + "x" * 30 for index in range(100)]
    pages = paginate(lines, 500)
    assert len(pages) > 1
    assert all(len(page) <= 500 for page in pages)
    assert "\n".join(pages).splitlines() == lines


def test_paginate_truncates_a_line_longer_than_a_page() -> None:
    pages = paginate(["short", "y" * 1000, "after"], 100)
    assert pages == ["short", "y" * 99 + "…", "after"]


def test_paginate_drops_blank_lines_at_page_breaks() -> None:
    pages = paginate(["a" * 8, "", "b" * 8, "", "", "c" * 8], 10)
    assert pages == ["a" * 8, "b" * 8, "c" * 8]
    assert paginate([]) == []
    assert paginate(["", "  "]) == []


def test_section_embeds_title_continuations_and_say_empty() -> None:
    embeds = section_embeds(["x" * 3000] * 3, title="Tasks", colour=Colour.blue())
    assert [embed.title for embed in embeds] == ["Tasks", "Tasks (continued)", "Tasks (continued)"]
    [empty] = section_embeds([], title="Tasks", colour=Colour.blue(), empty="None yet.")
    assert empty.description == "None yet."


def test_batch_embeds_groups_into_valid_messages_in_order() -> None:
    embeds = [Embed(title=str(index), description="x" * 1500) for index in range(25)]
    embeds.insert(3, oversized())
    batches = batch_embeds(embeds)
    for batch in batches:
        assert_sendable(embeds=batch)
    sent = [embed.to_dict() for batch in batches for embed in batch]
    assert sent == [fit_embed(embed).to_dict() for embed in embeds]
    small = batch_embeds([Embed(title=str(index)) for index in range(23)])
    assert [len(batch) for batch in small] == [10, 10, 3]
