"""Which quest a day gets: the map walked from the setup day, each quest for its ``days``,
starting over after the last; an ``/admin schedule`` date overrides the walk (XP, streaks and
levels; Moderating a server)."""

from __future__ import annotations

from datetime import timedelta

from bot.content import load_content
from bot.curriculum.guild_map import GuildMap
from bot.presentation.help_text import Today, help_embeds
from tests import timeline
from tests.presentation.discord_check import text_of
from tests.support import SEED_QUESTS

SEED = load_content(SEED_QUESTS)
#: three quests of 2, 1 and 3 days, in this map order
A, B, C = (
    quest.model_copy(update={"days": days})
    for quest, days in zip(SEED.quests[:3], (2, 1, 3), strict=True)
)
START = timeline.now().date()  # the setup day: the walk counts days from it, any day


def _walk(guild_map: GuildMap, days: int) -> list[str]:
    return [guild_map.quest_on(START, START + timedelta(d)).id for d in range(days)]  # type: ignore[union-attr]


def test_each_quest_holds_its_days_in_map_order_and_the_walk_starts_over() -> None:
    walk = _walk(GuildMap(quests=(A, B, C), phase_titles={}), 14)
    assert walk == [A.id, A.id, B.id, C.id, C.id, C.id] * 2 + [A.id, A.id]


def test_a_scheduled_date_overrides_the_walk_and_only_that_date() -> None:
    scheduled = {START + timedelta(1): C.id}
    walk = _walk(GuildMap(quests=(A, B, C), phase_titles={}, overrides=scheduled), 4)
    assert walk == [A.id, C.id, B.id, C.id]


def test_a_scheduled_quest_taken_off_the_map_leaves_the_walk_its_day() -> None:
    scheduled = {START: "a-quest-since-disabled"}
    assert _walk(GuildMap(quests=(A, B, C), phase_titles={}, overrides=scheduled), 1) == [A.id]


def test_the_shipped_map_gives_the_inference_engine_its_five_days_and_help_lists_its_builds() -> (
    None
):
    """The shipped walk: the days before the inference engine are the earlier quests' days;
    then five days of it, and /help on each of them names every task with its command."""
    guild_map = GuildMap(quests=SEED.quests, phase_titles={})
    order = [quest.id for quest in SEED.quests]
    first = sum(quest.days for quest in SEED.quests[: order.index("inference-engine")])
    walk = _walk(guild_map, first + 6)
    assert walk[first - 1] != "inference-engine"
    assert walk[first : first + 5] == ["inference-engine"] * 5
    assert walk[first + 5] != "inference-engine"
    quest = guild_map.quest("inference-engine")
    text = text_of(help_embeds(Today(configured=True, quest=quest), []))
    for task in ("paged-kv", "speculative-accept", "int8-weights", "kv-cache-decode"):
        assert f"`/submit task:inference-engine/{task}`" in text, task
    flops = text_of(help_embeds(Today(True, guild_map.quest("flops-accounting")), []))
    assert "`/submit task:flops-accounting/count-flops`" in flops
