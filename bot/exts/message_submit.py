"""The "Submit solution" message command: submit the code of one's own message.

The member right-clicks their message (Apps > Submit solution).  The bot takes its ``.py`` or
``.ipynb`` attachment or its ``python`` code block (``bot.intake.message_code``), downloads
an attachment at once (its URL is signed and expires), and asks for the build task with a
select menu, today's quest's tasks first.  The pick goes through ``/submit``'s own path
(``bot.exts.submissions.queue_upload``): same validation, limits, rate limits, queue and
verdict delivery, the verdict replacing the menu's message.

The code waits for the pick in memory, for ``CHOICE_WINDOW``, under a random key carried in
the select's ``custom_id``.  The select is a ``DynamicItem`` registered with the bot, so a
click is always answered: with the submission while the code is held, else (after the window,
after a newer "Submit solution" by the same member, or after a restart) with "This choice
expired".  Nothing is stored for the pick: fetching the message again after a restart would
need the privileged Message Content intent (only the command's own payload is exempt) and a
fresh download, so a restart asks the member to run the command again instead.
"""

from __future__ import annotations

import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Self

import discord
from discord import app_commands
from discord.ext import commands

from bot import clock
from bot.app import BrrrBot
from bot.curriculum.guild_map import today_quest
from bot.curriculum.task_choices import TaskMenu, build_task_menu
from bot.exts.common import UserFacingError, bot_of, guild_id_of
from bot.exts.error_replies import AnswersErrors, on_app_command_error
from bot.exts.submissions import download, queue_upload
from bot.intake.message_code import AttachedCode, AttachmentInfo, NoCode, find_code
from bot.intake.submission_input import UploadLimits
from bot.presentation.limits import truncate

log = logging.getLogger(__name__)

MENU_NAME = "Submit solution"
#: how long the task choice stays open (the code waits in memory until then)
CHOICE_WINDOW = timedelta(minutes=10)
EXPIRED = "This choice expired: run Submit solution again on your message."
_PREFIX = "brrr:submit-solution:"


@dataclass(frozen=True)
class HeldCode:
    """Downloaded code waiting for its member to pick the task."""

    user_id: int
    filename: str
    data: bytes
    source: str  # how the prompt named it, e.g. "`matmul.py`"
    expires_at: datetime


class TaskSelect(
    AnswersErrors,
    discord.ui.DynamicItem[discord.ui.Select[discord.ui.View]],
    template=re.compile(re.escape(_PREFIX) + r"(?P<key>[0-9a-f]{16})"),
):
    """The build-task select of one held submission; ``key`` finds the code."""

    def __init__(self, key: str, options: list[discord.SelectOption]) -> None:
        super().__init__(
            discord.ui.Select(
                custom_id=_PREFIX + key, placeholder="Choose the build task", options=options
            )
        )
        self.key = key

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> Self:
        return cls(match["key"], list(getattr(item, "options", [])))

    async def clicked(self, interaction: discord.Interaction) -> None:
        cog = bot_of(interaction).get_cog(MessageSubmit.__cog_name__)
        assert isinstance(cog, MessageSubmit)  # the item is registered by the cog while loaded
        await cog.choose(interaction, self.key, self.item.values)


class MessageSubmit(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        self._held: dict[str, HeldCode] = {}
        # A context menu cannot be a cog method: it is added to the tree here instead.
        self.menu = app_commands.guild_only(
            app_commands.ContextMenu(name=MENU_NAME, callback=self.submit_message)
        )

    async def cog_load(self) -> None:
        self.bot.tree.add_command(self.menu)
        self.bot.add_dynamic_items(TaskSelect)

    async def cog_unload(self) -> None:
        self.bot.tree.remove_command(self.menu.name, type=self.menu.type)
        self.bot.remove_dynamic_items(TaskSelect)

    async def submit_message(
        self, interaction: discord.Interaction, message: discord.Message
    ) -> None:
        if message.author.id != interaction.user.id:
            raise UserFacingError(
                "You can only submit your own message. Post your solution (a .py or .ipynb "
                "file, or a ```python block) and run Submit solution on it, or use /submit."
            )
        found = find_code(
            message.content, [AttachmentInfo(a.filename, a.size) for a in message.attachments]
        )
        if isinstance(found, NoCode):
            raise UserFacingError(found.message)
        guild_id = guild_id_of(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        guild_map = await self.bot.services.guild_map(guild_id)
        today = today_quest(guild_map, await self.bot.services.guild(guild_id), clock.now())
        menu = build_task_menu(guild_map, today)
        if not menu.choices:
            raise UserFacingError("This server's map has no build tasks to submit code to.")
        notes: list[str] = []
        if isinstance(found, AttachedCode):
            limits = UploadLimits.of(self.bot.services.settings)
            data = await download(message.attachments[found.index], limits)
            filename, source = found.filename, f"`{truncate(found.filename, 80)}`"
            notes += [found.note] if found.note else []
        else:
            plural = "s" if found.lines != 1 else ""
            filename, data = found.filename, found.data
            source = f"the code block of your message ({found.lines} line{plural})"
        key = self._hold(interaction.user.id, filename, data, source)
        view = discord.ui.View(timeout=None)
        view.add_item(TaskSelect(key, _options(menu)))
        await interaction.edit_original_response(
            content="\n".join([_prompt(source, menu), *notes]), view=view
        )

    async def choose(self, interaction: discord.Interaction, key: str, values: list[str]) -> None:
        """The member picked the task: submit the held code as ``/submit`` would."""
        try:
            held = self._held.get(key)
            if held is None or held.expires_at <= clock.now():
                self._held.pop(key, None)
                await interaction.response.edit_message(content=EXPIRED, view=None)
                return
            if held.user_id != interaction.user.id:
                raise UserFacingError("This choice belongs to someone else's submission.")
            del self._held[key]  # one pick, one submission
            (ref,) = values
            await interaction.response.edit_message(
                content=f"Submitting {held.source} to `{ref}`…", view=None
            )
            await queue_upload(interaction, ref, held.filename, held.data)
        except app_commands.AppCommandError as exc:
            await on_app_command_error(interaction, exc)
        except Exception as exc:  # answered like a failed command: logged with a reference
            await on_app_command_error(interaction, app_commands.CommandInvokeError(self.menu, exc))

    def _hold(self, user_id: int, filename: str, data: bytes, source: str) -> str:
        """Keep the code for ``CHOICE_WINDOW`` under a new key; the member's earlier pending
        choice and every expired one are dropped (memory holds one upload per member)."""
        now = clock.now()
        self._held = {
            key: held
            for key, held in self._held.items()
            if held.expires_at > now and held.user_id != user_id
        }
        key = secrets.token_hex(8)
        self._held[key] = HeldCode(user_id, filename, data, source, now + CHOICE_WINDOW)
        return key


def _prompt(source: str, menu: TaskMenu) -> str:
    first = "Today's quest comes first. " if any(c.today for c in menu.choices) else ""
    more = (
        f" {menu.left_out} more build task(s) did not fit here: use /submit for those."
        if menu.left_out
        else ""
    )
    minutes = int(CHOICE_WINDOW.total_seconds() // 60)
    return f"Which build task is {source} for? {first}Choose within {minutes} minutes.{more}"


def _options(menu: TaskMenu) -> list[discord.SelectOption]:
    return [
        discord.SelectOption(
            label=truncate(f"{choice.task.title} (+{choice.task.xp} XP)", 100),
            value=choice.ref,
            description=truncate(
                f"{choice.ref} · today's quest" if choice.today else choice.ref, 100
            ),
        )
        for choice in menu.choices
    ]


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(MessageSubmit(bot))
