"""The leaderboard embed and the profile text."""

from __future__ import annotations

from bot.presentation.board_embeds import leaderboard_embed, profile_text
from bot.progress.leaderboard import Entry, Page
from bot.progress.levels import progress
from bot.progress.profile import Profile
from bot.progress.streaks import Streak
from tests.presentation.discord_check import assert_sendable


def entries(first_rank: int, count: int) -> tuple[Entry, ...]:
    return tuple(
        Entry(rank, rank, 1000 + rank, f"member {rank}", 1000 - rank)
        for rank in range(first_rank, first_rank + count)
    )


def test_first_page_has_medals_and_marks_the_caller() -> None:
    top = entries(1, 10)
    page = Page("week", "2026-W48", 1, 3, 27, top, caller=top[4])
    embed = leaderboard_embed(page, period_label="this week", caller_name="member 5")
    assert_sendable(embeds=[embed])
    lines = embed.description.splitlines()
    assert lines[:3] == [
        "🥇 **member 1** · 999 XP",
        "🥈 **member 2** · 998 XP",
        "🥉 **member 3** · 997 XP",
    ]
    assert lines[3] == "`#4` **member 4** · 996 XP"
    assert lines[4] == "`#5` **member 5** · 995 XP ← you"
    assert lines[-1] == "member 5, you are #5 with 995 XP."
    assert embed.title == "🏆 Leaderboard · This week"
    assert embed.footer.text == "Page 1/3 · 27 members ranked"


def test_caller_off_the_page_gets_their_own_rank_line() -> None:
    caller = Entry(27, 99, 99, "Zed", 1)
    page = Page("month", "2026-11", 2, 3, 27, entries(11, 10), caller)
    embed = leaderboard_embed(page, period_label="this month", caller_name="Zed")
    assert "🥇" not in embed.description and "← you" not in embed.description
    assert embed.description.splitlines()[-1] == "Zed, you are #27 with 1 XP."


def test_caller_without_xp() -> None:
    page = Page("week", "2026-W48", 1, 1, 3, entries(1, 3), None)
    embed = leaderboard_embed(page, period_label="this week", caller_name="Ada")
    assert embed.description.splitlines()[-1] == "Ada, you have no XP this week yet."
    page = Page("all", "all", 1, 1, 3, entries(1, 3), None)
    embed = leaderboard_embed(page, period_label="all time", caller_name="Ada")
    assert embed.title == "🏆 Leaderboard · All time"
    assert embed.description.splitlines()[-1] == "Ada, you have no XP yet."


def test_empty_board_and_hostile_names() -> None:
    page = Page("week", "2026-W48", 1, 1, 0, (), None)
    embed = leaderboard_embed(page, period_label="this week", caller_name="@everyone **x**")
    assert_sendable(embeds=[embed])
    first, _, last = embed.description.splitlines()
    assert first == "Nobody has XP this week yet: complete a task to lead the board."
    assert "@everyone" not in last and r"\*\*x\*\*" in last
    assert embed.footer.text == "Page 1/1 · 0 members ranked"


def test_long_names_are_cut() -> None:
    page = Page("all", "all", 1, 1, 1, (Entry(1, 1, 1, "n" * 500, 5),), None)
    embed = leaderboard_embed(page, period_label="all time", caller_name="c" * 500)
    assert_sendable(embeds=[embed])
    assert "n" * 100 not in embed.description and "c" * 100 not in embed.description


def test_profile_text() -> None:
    profile = Profile(7, 190, progress(190), 4, 35, Streak(1, 5), ("a/x", "a/y"), ("a",))
    assert profile_text(profile, "Ada") == (
        "**Ada** · level 3\n"
        "40/150 XP into level 3: 110 XP to level 4\n"
        "190 XP in total · rank #4 · 35 XP this week\n"
        "Streak: 1 day (best 5)\n"
        "Completed: 1 quest, 2 tasks"
    )
    newcomer = Profile(8, 0, progress(0), None, 0, Streak(0, 0), (), ())
    assert "not ranked yet" in profile_text(newcomer, "Bo")
    assert "Completed: 0 quests, 0 tasks" in profile_text(newcomer, "Bo")
