"""What every cog shares: user-facing errors, autocomplete, and member lookup."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.content import AnyTask, Quest
from bot.presentation.limits import truncate

if TYPE_CHECKING:
    from bot.app import BrrrBot
    from bot.curriculum.guild_map import GuildMap

MAX_CHOICES = 25


class UserFacingError(app_commands.AppCommandError):
    """A specific, expected problem; the message is shown to the caller as is."""


def bot_of(interaction: discord.Interaction) -> BrrrBot:
    return interaction.client  # type: ignore[return-value]


def guild_id_of(interaction: discord.Interaction) -> int:
    if interaction.guild_id is None:
        raise UserFacingError("This command works in a server, not in DMs.")
    return interaction.guild_id


def display_name(user: discord.abc.User) -> str:
    return getattr(user, "display_name", None) or user.name


async def find_task(
    interaction: discord.Interaction, ref: str, kinds: Collection[str]
) -> tuple[GuildMap, Quest, AnyTask]:
    """The task a member typed or picked, or a message that says what to do instead
    (``/answer`` and ``/done``; a build task is intake's to find: ``accept.find_build_task``)."""
    guild_map = await bot_of(interaction).services.guild_map(guild_id_of(interaction))
    try:
        quest, task = guild_map.find_task(ref.strip())
    except KeyError:
        raise UserFacingError(unknown_task_text(ref)) from None
    if task.kind not in kinds:
        raise UserFacingError(wrong_kind_text(ref, task.kind))
    return guild_map, quest, task


def unknown_task_text(ref: str) -> str:
    """What the cogs say to a task ref that is not on the server's map."""
    return (
        f"There is no task `{truncate(ref, 100)}` in this server's map. "
        "Pick one from the list as you type, or see `/quests`."
    )


def wrong_kind_text(ref: str, kind: str) -> str:
    """What the cogs say to a task of ``kind`` given where another kind was expected."""
    hint = {"build": "/submit", "quiz": "/answer", "exercise": "/done", "reading": "/done"}[kind]
    return f"`{ref}` is a {kind} task: use `{hint}` for it."


def find_quest(guild_map: GuildMap, quest_id: str) -> Quest:
    """The quest a member typed or picked, or a message that says where to look."""
    try:
        return guild_map.quest(quest_id.strip())
    except KeyError:
        raise UserFacingError(
            f"There is no quest `{truncate(quest_id, 100)}` in this server's map; see `/quests`."
        ) from None


def task_autocomplete(
    kinds: Collection[str],
) -> Callable[[discord.Interaction, str], Awaitable[list[app_commands.Choice[str]]]]:
    """Autocomplete over this server's tasks of the given kinds, matching ref or title."""

    async def complete(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        if interaction.guild_id is None:
            return []
        guild_map = await bot_of(interaction).services.guild_map(interaction.guild_id)
        needle = current.casefold().strip()
        choices = []
        for ref, _, task in guild_map.tasks():
            if task.kind in kinds and (needle in ref or needle in task.title.casefold()):
                label = truncate(f"{ref} · {task.title} (+{task.xp} XP)", 100)
                choices.append(app_commands.Choice(name=label, value=ref[:100]))
        return choices[:MAX_CHOICES]

    return complete


async def quest_autocomplete(
    interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    """Autocomplete over this server's quests, matching id or title."""
    if interaction.guild_id is None:
        return []
    guild_map = await bot_of(interaction).services.guild_map(interaction.guild_id)
    needle = current.casefold().strip()
    return [
        app_commands.Choice(name=truncate(f"{q.title} ({q.id})", 100), value=q.id[:100])
        for q in guild_map.quests
        if needle in q.id or needle in q.title.casefold()
    ][:MAX_CHOICES]
