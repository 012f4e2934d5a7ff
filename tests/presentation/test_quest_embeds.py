"""Quest and map embeds: complete, marked with the caller's progress, and always sendable."""

from __future__ import annotations

from typing import Any

from bot.content import Content, Quest, QuizTask
from bot.presentation.limits import batch_embeds
from bot.presentation.quest_embeds import DONE, NOT_YET, map_embeds, quest_embeds
from tests.presentation.discord_check import assert_sendable, text_of

REF = "go-brrrr/{}"


def shown(quest: Quest, content: Content, **kwargs: Any) -> str:
    embeds = quest_embeds(
        quest, phase_title=content.phase_of(quest.id).title, library=content.library, **kwargs
    )
    for batch in batch_embeds(embeds):
        assert_sendable(embeds=batch)
    return text_of(embeds)


def test_seed_quest_fits_and_shows_everything(content: Content, seed_quest: Quest) -> None:
    text = shown(seed_quest, content)
    assert seed_quest.title in text
    assert "Foundations: the three bottlenecks" in text
    for reading in seed_quest.readings:
        entry = content.library[reading.ref]
        assert f"[{entry.title}]({entry.url})" in text
        assert f"{entry.kind} · {entry.cost}" in text
        assert " ".join(reading.note.split()) in text
    for task in seed_quest.tasks:
        assert f"**{task.title}** · {task.kind} · {task.xp} XP" in text
    build = f"`/submit task:{REF.format('matmul-three-ways')}` and a `.py` or `.ipynb` file"
    assert build in text
    assert "`matmul_loops(A, B) -> Tensor`, `matmul_dot(A, B) -> Tensor`" in text
    assert f"`/answer task:{REF.format('shape-predictions')}`" in text
    assert "2. What is the shape of those scores divided by `math.sqrt(64)`?" in text
    assert f"`/done task:{REF.format('matrix-drill')}`" in text
    assert f"`/done task:{REF.format('zero-to-hero')}`" in text
    assert DONE not in text and NOT_YET not in text  # no caller, no marks


def test_quiz_explanations_are_never_shown(content: Content, seed_quest: Quest) -> None:
    text = shown(seed_quest, content)
    quizzes = [task for task in seed_quest.tasks if isinstance(task, QuizTask)]
    explanations = [q.explanation for quiz in quizzes for q in quiz.questions if q.explanation]
    assert explanations
    assert not [e for e in explanations if " ".join(e.split())[:40] in text]


def test_callers_progress_marks_each_task(content: Content, seed_quest: Quest) -> None:
    earned = {REF.format("shape-predictions"): 20, REF.format("matrix-drill"): 10}
    text = shown(seed_quest, content, earned=earned, heading="Today's quest")
    assert f"{DONE} **Predict the shapes** · quiz · 20 of 30 XP" in text
    assert f"{DONE} **Matrix drill** · exercise · 10 XP" in text
    assert f"{NOT_YET} **Matrix multiply, three ways** · build · 60 XP" in text
    assert "2 of 5 tasks done · 30 of 160 XP" in text
    assert text.startswith("Today's quest")


def test_summary_is_reflowed_for_discord(content: Content, seed_quest: Quest) -> None:
    text = shown(seed_quest, content)
    assert "work out which of three things you are waiting on." in text


def huge_quest(seed: Quest) -> Quest:
    data = seed.model_dump()
    data["summary"] = "\n\n".join(f"Paragraph {n} @everyone " + "word " * 400 for n in range(12))
    data["readings"] = [{"ref": "brrr-intro", "note": "n" * 900} for _ in range(30)]
    data["readings"].append({"ref": "gone-from-library", "note": "still listed"})
    data["tasks"] = [
        {"id": f"t{n}", "title": f"Task {n}", "kind": "exercise", "xp": 5, "prompt": "p " * 3000}
        for n in range(20)
    ]
    return Quest.model_validate(data)


def test_a_huge_quest_is_split_into_sendable_messages(content: Content, seed_quest: Quest) -> None:
    quest = huge_quest(seed_quest)
    embeds = quest_embeds(quest, phase_title="P" * 2000, library=content.library, earned={})
    for embed in embeds:
        assert_sendable(embeds=[embed])
    batches = batch_embeds(embeds)
    assert len(batches) > 1
    for batch in batches:
        assert_sendable(embeds=batch)
    text = text_of(embeds)
    assert all(f"`/done task:go-brrrr/t{n}`" in text for n in range(20))
    assert "Paragraph 11" in text
    assert "**gone-from-library** (no longer in the library)" in text
    assert "@everyone" not in text


def test_map_marks_completed_quests_and_today(content: Content, seed_quest: Quest) -> None:
    other = seed_quest.model_copy(update={"id": "next-quest", "title": "Next quest"})
    phases = [("Foundations", [seed_quest]), ("Later", [other])]
    embeds = map_embeds(phases, completed_quests={"go-brrrr"}, today_quest_id="next-quest")
    assert_sendable(embeds=embeds)
    assert [embed.title for embed in embeds] == ["Phase 1: Foundations", "Phase 2: Later"]
    assert embeds[0].description == f"{DONE} **Go Brrrr** `go-brrrr` · 5 tasks · 160 XP"
    assert (
        embeds[1].description
        == f"{NOT_YET} **Next quest** `next-quest` · 5 tasks · 160 XP · 📍 today"
    )
    assert embeds[0].author.name == "🗺️ Learning map · 1 of 2 quests done"


def test_map_of_many_quests_paginates_and_an_empty_map_says_so(seed_quest: Quest) -> None:
    quests = [seed_quest.model_copy(update={"id": f"q{n}", "title": "T" * 200}) for n in range(100)]
    embeds = map_embeds([("Only phase", quests)], completed_quests=set(), today_quest_id=None)
    assert len(embeds) > 1
    for batch in batch_embeds(embeds):
        assert_sendable(embeds=batch)
    assert sum(embed.description.count("\n") + 1 for embed in embeds) == 100
    [empty] = map_embeds([], completed_quests=set(), today_quest_id=None)
    assert empty.description == "No quests yet."
