"""The build tasks "Submit solution" offers: today's quest's first, at most 25."""

from __future__ import annotations

from bot.curriculum.guild_map import GuildMap
from bot.curriculum.task_choices import MAX_OPTIONS, build_task_menu
from tests.support import seed_content


def _seed_map() -> GuildMap:
    content = seed_content()
    quests = tuple(content.quest(q) for phase in content.phases for q in phase.quests)
    return GuildMap(quests=quests, phase_titles={p.id: p.title for p in content.phases})


def test_todays_build_tasks_come_first_then_the_map_in_order() -> None:
    guild_map = _seed_map()
    builds = [ref for ref, _, task in guild_map.tasks() if task.kind == "build"]
    today = guild_map.quest("transformer-internals")
    menu = build_task_menu(guild_map, today)
    refs = [choice.ref for choice in menu.choices]
    todays = [ref for ref in builds if ref.startswith("transformer-internals/")]
    assert len(todays) >= 2
    assert refs == todays + [ref for ref in builds if ref not in todays]
    assert [choice.today for choice in menu.choices] == [ref in todays for ref in refs]
    assert menu.left_out == 0
    assert build_task_menu(guild_map, None).choices[0].ref == builds[0]


def test_more_than_25_build_tasks_are_cut_and_counted() -> None:
    seed = _seed_map()
    many = GuildMap(quests=seed.quests * 4, phase_titles=seed.phase_titles)
    builds = sum(1 for _, _, task in many.tasks() if task.kind == "build")
    assert builds > MAX_OPTIONS
    menu = build_task_menu(many, None)
    assert len(menu.choices) == MAX_OPTIONS
    assert menu.left_out == builds - MAX_OPTIONS
