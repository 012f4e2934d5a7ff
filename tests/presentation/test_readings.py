"""A quest's reading list and library search results."""

from __future__ import annotations

from bot.content import Content, Quest
from bot.presentation.readings import library_embeds, link, readings_embeds
from bot.presentation.search import search_library
from tests.presentation.discord_check import assert_sendable, text_of


def test_readings_show_link_why_and_note(content: Content, seed_quest: Quest) -> None:
    embeds = readings_embeds(seed_quest, content.library)
    assert_sendable(embeds=embeds)
    text = text_of(embeds)
    assert embeds[0].title == "📚 Readings for Go Brrrr"
    intro = content.library["brrr-intro"]
    assert f"**[{intro.title}]({intro.url})** · post · free" in text
    assert "by Horace He" in text
    assert f"*Why read it:* {' '.join(intro.why.split())}" in text
    assert "*For this quest:* First assigned reading." in text


def test_link_cannot_break_out_of_its_brackets() -> None:
    assert link("a [b] c", "https://x.org/a_(b)") == "[a (b) c](https://x.org/a_%28b%29)"


def test_library_results_show_entries_and_citing_quests(content: Content) -> None:
    entries = search_library(content.library, "pytorch", None)
    embeds = library_embeds(entries, cited_by=content.cited_by, query="pytorch", kind=None)
    assert_sendable(embeds=embeds)
    text = text_of(embeds)
    assert embeds[0].title == f"📚 Library “pytorch”: {len(entries)} readings"
    assert all(entry.title in text for entry in entries)
    assert "Cited by: `go-brrrr`" in text
    assert "Tags: " in text


def test_no_results_say_so(content: Content) -> None:
    [embed] = library_embeds([], cited_by=content.cited_by, query="@everyone", kind="video")
    assert embed.title == "📚 Library “@\u200beveryone” (video): 0 readings"
    assert embed.description == "Nothing in the library matches “@\u200beveryone” (video)."


def test_many_results_fit_one_message_and_count_the_rest(content: Content) -> None:
    base = content.library["brrr-intro"]
    entries = [
        base.model_copy(update={"id": f"e{n}", "title": f"Entry {n}", "why": "w" * 3000})
        for n in range(200)
    ]
    embeds = library_embeds(entries, cited_by={}, query=None, kind=None)
    assert_sendable(embeds=embeds)
    shown = sum(f"Entry {n}]" in text_of(embeds) for n in range(200))
    assert 0 < shown < 200
    assert (
        embeds[-1].footer.text
        == f"Showing {shown}; {200 - shown} more not shown. Narrow the search."
    )


def test_an_empty_quest_reading_list(content: Content, seed_quest: Quest) -> None:
    quest = seed_quest.model_copy(update={"readings": ()})
    [embed] = readings_embeds(quest, content.library)
    assert embed.description == "This quest has no readings."
