"""/solutions: read the solutions other members shared of a build task you passed, a page at a
time, ephemerally (``bot.progress.solutions`` decides what may be read).

Before the first read of a speed-ranked task's solutions the member is told what reading means
for their later results and opens them with a button.  The page buttons are a
``DynamicItem``: the custom id carries the reader, the page and a digest of the task ref (a ref
can be longer than a custom id allows), so a click works the same after a restart, and every
click reads afresh: a member who stopped sharing is gone from the next page.
"""

from __future__ import annotations

import hashlib
import io
import re
from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot import clock
from bot.app import BrrrBot
from bot.content import AnyTask
from bot.exts.common import (
    UserFacingError,
    bot_of,
    guild_id_of,
    task_autocomplete,
    unknown_task_text,
)
from bot.exts.error_replies import AnswersErrors
from bot.presentation import solution_pages as words
from bot.progress import solutions
from bot.progress.solutions import SolutionsRefused
from bot.progress.speed_results import is_speed_ranked

GONE = "That task is no longer on this server's map."
OPEN = "Show the solutions"


def task_digest(ref: str) -> str:
    """16 hex digits naming a task ref in a custom id."""
    return hashlib.sha256(ref.encode()).hexdigest()[:16]


async def _build_task(interaction: discord.Interaction, ref: str) -> AnyTask:
    guild_map = await bot_of(interaction).services.guild_map(guild_id_of(interaction))
    try:
        _, task = guild_map.find_task(ref)
    except KeyError:
        raise UserFacingError(unknown_task_text(ref)) from None
    if task.kind != "build":
        raise UserFacingError(words.not_a_build_task(ref, task.kind))
    return task


@app_commands.guild_only()
class Solutions(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot

    @app_commands.command(
        name="solutions", description="Read the solutions members shared of a task you passed"
    )
    @app_commands.describe(task="a build task you passed, e.g. go-brrrr/matmul-three-ways")
    @app_commands.autocomplete(task=task_autocomplete({"build"}))
    async def solutions(self, interaction: discord.Interaction, task: str) -> None:
        ref = task.strip()
        found = await _build_task(interaction, ref)
        speed_ranked = is_speed_ranked(found)
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            seen = await self.bot.services.read(
                solutions.overview,
                guild_id=guild_id_of(interaction),
                user_id=interaction.user.id,
                task_ref=ref,
                speed_ranked=speed_ranked,
            )
        except SolutionsRefused:
            raise UserFacingError(words.not_passed(found.title, ref)) from None
        if not seen.total:
            await interaction.edit_original_response(content=words.nobody_shares(found.title, ref))
        elif speed_ranked and seen.opened_at is None:
            view = discord.ui.View(timeout=None)  # answered by custom id, not this object
            view.add_item(PageButton(interaction.user.id, 0, task_digest(ref), OPEN))
            await interaction.edit_original_response(
                content=words.before_reading(found.title, ref, seen.total), view=view
            )
        else:
            await _show(interaction, ref, found, 0)


async def _show(interaction: discord.Interaction, ref: str, task: AnyTask, number: int) -> None:
    """Page ``number`` of the task's solutions, in place of the reply (deferred by the caller)."""
    speed_ranked = is_speed_ranked(task)
    try:
        page = await bot_of(interaction).services.write(
            solutions.open_page,
            guild_id=guild_id_of(interaction),
            user_id=interaction.user.id,
            task_ref=ref,
            speed_ranked=speed_ranked,
            page=number,
            now=clock.now(),
        )
    except SolutionsRefused:  # their pass was deleted or regraded since
        raise UserFacingError(words.not_passed(task.title, ref)) from None
    if not page.solutions:  # everyone stopped sharing since
        await interaction.edit_original_response(
            content=words.nobody_shares(task.title, ref), attachments=[], view=None
        )
        return
    view = discord.ui.View(timeout=None)
    digest = task_digest(ref)
    if page.page > 0:
        view.add_item(PageButton(interaction.user.id, page.page - 1, digest, "◀ Previous"))
    if page.page + 1 < page.pages:
        view.add_item(PageButton(interaction.user.id, page.page + 1, digest, "Next ▶"))
    await interaction.edit_original_response(
        content=words.page_text(page, title=task.title, speed_ranked=speed_ranked),
        attachments=[
            discord.File(io.BytesIO(a.data), filename=a.filename) for a in words.attachments(page)
        ],
        view=view if view.children else None,
    )


class PageButton(
    AnswersErrors,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"brrr:solutions:(?P<user_id>[0-9]{1,20}):(?P<page>[0-9]{1,4}):(?P<task>[0-9a-f]{16})",
):
    """Shows one page of a task's solutions to the member who asked for them.  Every reply it
    sits on is ephemeral, so Discord lets nobody else click it; the page is read for whoever
    clicks, by their own pass and nobody else's."""

    def __init__(self, user_id: int, page: int, task: str, label: str = "Show") -> None:
        super().__init__(
            discord.ui.Button(
                label=label,
                style=discord.ButtonStyle.primary,
                custom_id=f"brrr:solutions:{user_id}:{page}:{task}",
            )
        )
        self.user_id = user_id
        self.page = page
        self.task = task

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction,
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> PageButton:
        return cls(int(match["user_id"]), int(match["page"]), match["task"])

    async def clicked(self, interaction: discord.Interaction) -> None:
        guild_map = await bot_of(interaction).services.guild_map(guild_id_of(interaction))
        found = next(
            (
                (ref, task)
                for ref, _, task in guild_map.tasks()
                if task.kind == "build" and task_digest(ref) == self.task
            ),
            None,
        )
        if found is None:
            await interaction.response.edit_message(content=GONE, attachments=[], view=None)
            return
        await interaction.response.defer()
        await _show(interaction, found[0], found[1], self.page)


async def setup(bot: BrrrBot) -> None:
    bot.add_dynamic_items(PageButton)
    await bot.add_cog(Solutions(bot))
