"""/help's embeds: today's quest by task kind, the command lines, and Discord's limits."""

from __future__ import annotations

import discord
from discord import app_commands

from bot.content import Quest
from bot.exts.help import split_commands, submit_menu
from bot.presentation.help_text import LINE, CommandHelp, Today, command_line, help_embeds
from bot.presentation.limits import batch_embeds
from tests.presentation.discord_check import assert_sendable, text_of

LEARNER = [
    CommandHelp("today", "Today's quest"),
    CommandHelp("leaderboard", "The server's top learners", ("[period]",)),
    CommandHelp("privacy hide", "Leave the leaderboards"),
    CommandHelp("Submit solution", menu="message"),
]
MODERATOR = [CommandHelp("admin setup", "Where and when the quest posts", ("[channel]",))]


def shown(today: Today, moderator: list[CommandHelp] | None = None, **kwargs: str) -> str:
    embeds = help_embeds(today, LEARNER, moderator, **kwargs)
    for batch in batch_embeds(embeds):
        assert_sendable(embeds=batch)
    return text_of(embeds)


def test_today_shows_each_task_and_the_command_that_completes_it(seed_quest: Quest) -> None:
    text = shown(Today(configured=True, quest=seed_quest), submit_menu="Submit solution")
    assert "Today's quest: Go Brrrr" in text
    for task in seed_quest.tasks:
        assert f"**{task.title}** · {task.kind} · {task.xp} XP" in text
    assert (
        "Submit your `.py` or `.ipynb` file with `/submit task:go-brrrr/matmul-three-ways`, "
        "or use **Submit solution** on a message with your code (Apps menu)."
    ) in text
    assert "Answer with `/answer task:go-brrrr/shape-predictions`." in text
    assert "Once done, mark it with `/done task:go-brrrr/matrix-drill`." in text


def test_without_a_submit_menu_builds_name_only_submit(seed_quest: Quest) -> None:
    text = shown(Today(configured=True, quest=seed_quest))
    assert "`/submit task:go-brrrr/matmul-three-ways`." in text
    assert "Apps menu" not in text.split("🧭")[0]  # the quest part mentions no menu


def test_before_setup_and_with_an_empty_map_it_says_who_can_fix_it() -> None:
    assert "a moderator starts the daily posts with `/admin setup`" in shown(
        Today(configured=False, quest=None)
    )
    assert "no quests enabled" in shown(Today(configured=True, quest=None))


def test_moderator_commands_only_when_given() -> None:
    today = Today(configured=False, quest=None)
    assert "Moderator commands" not in shown(today)
    text = shown(today, MODERATOR)
    assert "Moderator commands" in text
    assert "`/admin setup [channel]` · Where and when the quest posts" in text


def test_command_lines() -> None:
    assert command_line(LEARNER[1]) == "`/leaderboard [period]` · The server's top learners"
    assert command_line(LEARNER[3]) == (
        "**Submit solution** · on a message: right-click it (long-press on a phone) → Apps → "
        "Submit solution"
    )
    user_menu = command_line(CommandHelp("Show profile", menu="user"))
    assert user_menu.startswith("**Show profile** · on a member: ")
    assert command_line(CommandHelp("quests")) == "`/quests`"
    pinging = command_line(CommandHelp("shout", "tell @everyone"))
    assert "@everyone" not in pinging and "@\u200beveryone" in pinging


def test_hundreds_of_long_commands_stay_sendable_and_keep_every_line(seed_quest: Quest) -> None:
    many = [CommandHelp(f"cmd{number:03}", "x" * 300, ("opt",) * 5) for number in range(300)]
    embeds = help_embeds(Today(configured=True, quest=seed_quest), many, many)
    batches = batch_embeds(embeds)
    for batch in batches:
        assert_sendable(embeds=batch)
    text = text_of(embeds)
    assert all(text.count(f"`/cmd{number:03} ") == 2 for number in range(300))
    assert max(len(line) for line in text.splitlines()) <= max(LINE, 256)


def test_the_tree_is_split_by_default_permissions_and_groups_by_subcommand() -> None:
    async def command(interaction: discord.Interaction, task: str, period: str = "week") -> None:
        """Never called."""

    async def on_message(interaction: discord.Interaction, message: discord.Message) -> None:
        """Never called."""

    submit = app_commands.Command(name="submit", description="Submit", callback=command)
    admin = app_commands.Group(
        name="admin", description="Mods", default_permissions=discord.Permissions(manage_guild=True)
    )
    admin.add_command(app_commands.Command(name="xp", description="Grant", callback=command))
    menu = app_commands.ContextMenu(name="Submit solution", callback=on_message)
    everyone, moderators = split_commands([submit, admin, menu])
    assert everyone == [
        CommandHelp("submit", "Submit", ("task", "[period]")),
        CommandHelp("Submit solution", menu="message"),
    ]
    assert moderators == [CommandHelp("admin xp", "Grant", ("task", "[period]"))]
    assert submit_menu([submit, menu]) is None  # a message command, but not the submissions one
