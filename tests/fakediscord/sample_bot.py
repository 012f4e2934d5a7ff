"""A small discord.py bot with one command per interaction path, to test the fake against.

It runs in-process (fast) or as a child process through the launcher
(``--entry tests.fakediscord.sample_bot:main``), like the real bot.
"""

from __future__ import annotations

import asyncio
import io
import re
import signal
import time
from collections.abc import Sequence

import discord
from discord import app_commands
from discord.ext import commands

TOPICS = ["matmul", "memory bandwidth", "kernel fusion", "mixed precision", "tiling"]
TOO_MANY = "*"


class SampleBot(commands.Bot):
    def __init__(self, guild_id: int, *, ready_timeout: float = 2.0) -> None:
        intents = discord.Intents.none()
        intents.guilds = True
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=intents,
            allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=True),
            help_command=None,
            guild_ready_timeout=ready_timeout,
        )
        self.guild_id = guild_id
        #: /later and /late hold until the test sets this
        self.release = asyncio.Event()
        #: HTTP errors the commands caught
        self.failures: list[discord.HTTPException] = []
        register(self)

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """discord.py waits 5 s before a re-IDENTIFY to respect Discord's identify limit;
        the fake has none, and the wait would only slow the invalid-session test."""

    async def setup_hook(self) -> None:
        # What makes buttons outlive the process that posted them.
        self.add_view(PersistentView())
        self.add_dynamic_items(CounterButton)
        guild = discord.Object(self.guild_id)
        await self.tree.sync()
        self.tree.copy_global_to(guild=guild)
        await self.tree.sync(guild=guild)


class FeedbackModal(discord.ui.Modal, title="Feedback"):
    text: discord.ui.TextInput[FeedbackModal] = discord.ui.TextInput(
        label="What should we add?", custom_id="feedback:text", max_length=200
    )

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await interaction.response.send_message(f"thanks: {self.text.value}", ephemeral=True)


class VoteView(discord.ui.View):
    @discord.ui.button(label="Yes", custom_id="vote:yes")
    async def yes(
        self, interaction: discord.Interaction, button: discord.ui.Button[VoteView]
    ) -> None:
        await interaction.response.edit_message(content="voted yes", view=None)


class QuizView(discord.ui.View):
    @discord.ui.select(
        custom_id="quiz:answer",
        options=[discord.SelectOption(label=label) for label in ("O(n^2)", "O(n^3)")],
    )
    async def answer(
        self, interaction: discord.Interaction, select: discord.ui.Select[QuizView]
    ) -> None:
        await interaction.response.send_message(f"you chose {select.values[0]}", ephemeral=True)


class PickView(discord.ui.View):
    @discord.ui.select(
        custom_id="pick:topic",
        options=[discord.SelectOption(label=t, value=t) for t in TOPICS],
        max_values=2,
    )
    async def pick(
        self, interaction: discord.Interaction, select: discord.ui.Select[PickView]
    ) -> None:
        await interaction.response.edit_message(content=f"picked {', '.join(select.values)}")


class PersistentView(discord.ui.View):
    """``timeout=None`` and a fixed custom_id: registered at start, it answers any message."""

    def __init__(self) -> None:
        super().__init__(timeout=None)

    @discord.ui.button(label="OK", custom_id="persist:ok")
    async def ok(
        self, interaction: discord.Interaction, button: discord.ui.Button[PersistentView]
    ) -> None:
        await interaction.response.send_message("still here", ephemeral=True)


class CounterButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=r"count:(?P<n>\d+)"
):
    """State lives in the custom_id, so any process can answer a click."""

    def __init__(self, n: int) -> None:
        super().__init__(discord.ui.Button(label=str(n), custom_id=f"count:{n}"))
        self.n = n

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction,
        item: discord.ui.Button[discord.ui.View],
        match: re.Match[str],
    ) -> CounterButton:
        return cls(int(match["n"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        await interaction.response.send_message(f"count {self.n + 1}", ephemeral=True)


@app_commands.context_menu(name="Submit solution")
async def submit_solution(interaction: discord.Interaction, message: discord.Message) -> None:
    files = [f"{a.filename}={(await a.read()).decode()}" for a in message.attachments]
    await interaction.response.send_message(
        f"{message.author.name} wrote {message.content!r} with {files}", ephemeral=True
    )


admin = app_commands.Group(
    name="admin",
    description="server setup",
    default_permissions=discord.Permissions(manage_guild=True),
)


@admin.command(name="setup", description="choose the quest channel")
async def admin_setup(interaction: discord.Interaction, channel: discord.TextChannel) -> None:
    await interaction.response.send_message(f"quests go to {channel.mention}")


def register(bot: SampleBot) -> None:
    tree = bot.tree
    tree.add_command(admin)
    tree.add_command(submit_solution)

    @tree.command(description="replies at once")
    async def ping(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("pong")

    @tree.command(description="defers, then edits")
    async def slow(interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        await asyncio.sleep(0.05)
        await interaction.edit_original_response(content="slow done")

    @tree.command(description="replies with an embed")
    async def embed(interaction: discord.Interaction) -> None:
        card = discord.Embed(title="Quest", description="Go brrr").add_field(name="xp", value="10")
        await interaction.response.send_message(embed=card)

    @tree.command(description="tries an embed over the title limit")
    async def toolong(interaction: discord.Interaction) -> None:
        try:
            await interaction.response.send_message(embed=discord.Embed(title="x" * 300))
        except discord.HTTPException as error:
            bot.failures.append(error)
            await interaction.response.send_message(f"rejected {error.code}")

    @tree.command(description="picks a topic")
    async def topic(interaction: discord.Interaction, name: str) -> None:
        await interaction.response.send_message(f"topic {name}")

    @topic.autocomplete("name")
    async def topic_names(
        interaction: discord.Interaction, current: str
    ) -> Sequence[app_commands.Choice[str]]:
        if current == TOO_MANY:
            return [app_commands.Choice(name=f"t{i}", value=f"t{i}") for i in range(30)]
        return [app_commands.Choice(name=t, value=t) for t in TOPICS if current in t]

    @tree.command(description="asks for feedback in a modal")
    async def feedback(interaction: discord.Interaction) -> None:
        await interaction.response.send_modal(FeedbackModal())

    @tree.command(description="posts a vote button")
    async def vote(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("vote?", view=VoteView())

    @tree.command(description="posts a quiz question")
    async def quiz(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("matmul cost?", view=QuizView())

    @tree.command(description="offers topics in an ephemeral select")
    async def pick(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("which topics?", view=PickView(), ephemeral=True)

    @tree.command(description="posts buttons that survive a restart")
    async def persist(interaction: discord.Interaction) -> None:
        view = PersistentView()
        view.add_item(CounterButton(41))
        await interaction.response.send_message("persistent", view=view)

    @tree.command(description="sends a DM")
    async def dm(interaction: discord.Interaction, user: discord.User) -> None:
        try:
            await user.send("hello from the bot")
        except discord.Forbidden as error:
            await interaction.response.send_message(f"dm failed {error.code}", ephemeral=True)
        else:
            await interaction.response.send_message("dm sent")

    @tree.command(description="posts in the channel, not as a response")
    async def announce(interaction: discord.Interaction, text: str) -> None:
        assert isinstance(interaction.channel, discord.TextChannel)
        try:
            await interaction.channel.send(text)
        except discord.Forbidden as error:
            await interaction.response.send_message(f"cannot post {error.code}", ephemeral=True)
        else:
            await interaction.response.send_message("posted", ephemeral=True)

    @tree.command(description="answers, reads and edits its answer, follows up, deletes it")
    async def temp(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("temporary")
        answer = await interaction.original_response()
        await answer.edit(content=f"{answer.content}!")
        await interaction.followup.send("gone soon", ephemeral=True)
        await interaction.delete_original_response()

    @tree.command(description="reverses an uploaded file")
    async def upload(interaction: discord.Interaction, file: discord.Attachment) -> None:
        data = await file.read()
        await interaction.response.defer(thinking=True)
        reversed_file = discord.File(io.BytesIO(data[::-1]), filename="reversed.bin")
        await interaction.followup.send(f"got {len(data)} bytes", file=reversed_file)

    @tree.command(description="defers, waits for the test, then edits")
    async def later(interaction: discord.Interaction) -> None:
        await interaction.response.defer()
        await bot.release.wait()
        try:
            await interaction.edit_original_response(content="later done")
        except discord.HTTPException as error:
            bot.failures.append(error)

    @tree.command(description="waits for the test before its first response")
    async def late(interaction: discord.Interaction) -> None:
        await bot.release.wait()
        try:
            await interaction.response.send_message("too late?")
        except discord.HTTPException as error:
            bot.failures.append(error)


def main(argv: Sequence[str]) -> int:
    """``TOKEN GUILD_ID``: the entry point the launcher calls in a child process."""
    token, guild_id = argv
    bot = SampleBot(int(guild_id))

    async def run() -> None:
        async with bot:
            await bot.start(token)

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        return 130
    return 0


def stubborn(argv: Sequence[str]) -> int:
    """A program that ignores Ctrl-C: what ``BotProcess.stop`` must still end, and explain."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("ignoring Ctrl-C", flush=True)
    time.sleep(300)
    return 0
