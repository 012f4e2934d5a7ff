"""/answer (quiz in a modal) and /done (self-reported tasks).

A Discord modal holds at most five text inputs, so a longer quiz is asked in
pages: each page's modal leads to a "Continue" button for the next, and the
quiz is graded when the last page is submitted.  Grading is answer matching
in this process (no code runs); XP goes through the same ledger rules as
code verdicts.
"""

from __future__ import annotations

import logging
from typing import Any
from zoneinfo import ZoneInfo

import discord
from discord import app_commands
from discord.ext import commands

from bot import clock
from bot.app import BrrrBot
from bot.content import Question, QuizTask, TaskRef
from bot.content.quiz_grading import grade_quiz
from bot.exts.common import display_name, find_task, guild_id_of, task_autocomplete
from bot.exts.error_replies import answer_error
from bot.presentation.limits import truncate
from bot.presentation.verdicts import verdict_text
from bot.progress.awards import award_self_report, award_verdict
from bot.progress.members import ensure_member

log = logging.getLogger(__name__)

PAGE = 5  # text inputs per modal (Discord's limit)
LABEL = 45  # text input label limit
PLACEHOLDER = 100
TIMEOUT_S = 15 * 60


class QuizModal(discord.ui.Modal):
    def __init__(self, flow: QuizFlow, questions: list[Question], first_number: int) -> None:
        pages = -(-len(flow.task.questions) // PAGE)
        page = first_number // PAGE + 1
        title = flow.task.title if pages == 1 else f"{flow.task.title} ({page}/{pages})"
        super().__init__(title=truncate(title, LABEL), timeout=TIMEOUT_S)
        self.flow = flow
        self.inputs: list[tuple[str, discord.ui.TextInput[QuizModal]]] = []
        for number, question in enumerate(questions, start=first_number + 1):
            field: discord.ui.TextInput[QuizModal] = discord.ui.TextInput(
                label=truncate(f"Q{number}. {question.prompt}", LABEL),
                placeholder=truncate(question.prompt, PLACEHOLDER),
                max_length=200,
                required=False,
            )
            self.add_item(field)
            self.inputs.append((question.id, field))

    async def on_submit(self, interaction: discord.Interaction) -> None:
        for question_id, field in self.inputs:
            self.flow.answers[question_id] = field.value
        await self.flow.next(interaction)

    async def on_error(self, interaction: discord.Interaction, error: Exception) -> None:
        await answer_error(interaction, error, "quiz answers")


class ContinueView(discord.ui.View):
    def __init__(self, flow: QuizFlow) -> None:
        super().__init__(timeout=TIMEOUT_S)
        self.flow = flow

    @discord.ui.button(label="Continue", style=discord.ButtonStyle.primary)
    async def continue_(self, interaction: discord.Interaction, _: discord.ui.Button) -> None:
        if interaction.user.id != self.flow.user_id:
            await interaction.response.send_message("This quiz is someone else's.", ephemeral=True)
            return
        await interaction.response.send_modal(self.flow.modal())

    async def on_error(
        self, interaction: discord.Interaction, error: Exception, item: discord.ui.Item[Any]
    ) -> None:
        await answer_error(interaction, error, "quiz Continue")


class QuizFlow:
    """One member's pass through a quiz's pages; graded after the last."""

    def __init__(self, cog: Answers, task_ref: str, task: QuizTask, user_id: int) -> None:
        self.cog = cog
        self.task_ref = task_ref
        self.task = task
        self.user_id = user_id
        self.answers: dict[str, str] = {}
        self.asked = 0

    def modal(self) -> QuizModal:
        questions = list(self.task.questions[self.asked : self.asked + PAGE])
        modal = QuizModal(self, questions, self.asked)
        self.asked += len(questions)
        return modal

    async def next(self, interaction: discord.Interaction) -> None:
        if self.asked < len(self.task.questions):
            remaining = len(self.task.questions) - self.asked
            await interaction.response.send_message(
                f"Saved. {remaining} more question(s) to go.",
                view=ContinueView(self),
                ephemeral=True,
            )
            return
        await self.cog.grade(interaction, self)


class Answers(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot

    @app_commands.command(name="answer", description="Answer a quiz task")
    @app_commands.describe(task="the quiz task")
    @app_commands.autocomplete(task=task_autocomplete({"quiz"}))
    @app_commands.guild_only()
    async def answer(self, interaction: discord.Interaction, task: str) -> None:
        _, quest, found = await find_task(interaction, task, {"quiz"})
        assert isinstance(found, QuizTask)
        flow = QuizFlow(self, str(TaskRef(quest.id, found.id)), found, interaction.user.id)
        await interaction.response.send_modal(flow.modal())

    async def grade(self, interaction: discord.Interaction, flow: QuizFlow) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        guild_id = guild_id_of(interaction)
        verdict = grade_quiz(flow.task_ref, flow.task, flow.answers)
        guild = await self.bot.services.guild(guild_id)
        tz = ZoneInfo(guild.timezone if guild else "UTC")
        async with self.bot.services.sessions() as session, session.begin():
            member = await ensure_member(
                session, guild_id, interaction.user.id, display_name(interaction.user)
            )
            award = await award_verdict(
                session,
                guild_id=guild_id,
                member_id=member.id,
                task_ref=flow.task_ref,
                task_xp=flow.task.xp,
                status=verdict.status,
                score=verdict.score,
                submission_id=None,
                tz=tz,
                now=clock.now(),
                source="quiz",
            )
        content, embed = verdict_text(verdict, task_title=flow.task.title, award=award)
        await interaction.edit_original_response(content=content, embed=embed)

    @app_commands.command(name="done", description="Mark an exercise or reading as done")
    @app_commands.describe(task="the exercise or reading task")
    @app_commands.autocomplete(task=task_autocomplete({"exercise", "reading"}))
    @app_commands.guild_only()
    async def done(self, interaction: discord.Interaction, task: str) -> None:
        _, quest, found = await find_task(interaction, task, {"exercise", "reading"})
        guild_id = guild_id_of(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        guild = await self.bot.services.guild(guild_id)
        tz = ZoneInfo(guild.timezone if guild else "UTC")
        ref = str(TaskRef(quest.id, found.id))
        async with self.bot.services.sessions() as session, session.begin():
            member = await ensure_member(
                session, guild_id, interaction.user.id, display_name(interaction.user)
            )
            award = await award_self_report(
                session,
                guild_id=guild_id,
                member_id=member.id,
                task_ref=ref,
                task_xp=found.xp,
                tz=tz,
                now=clock.now(),
            )
        if award.xp_added == 0:
            message = f"You already marked `{ref}` as done. Nice work!"
        else:
            message = f"Marked `{ref}` as done: +{award.xp_added} XP"
            if award.streak_bonus:
                message += f" and +{award.streak_bonus} XP streak bonus (day {award.streak})"
            message += "."
            if award.leveled_up:
                message += f"\nLevel up! You reached level {award.new_level}."
        await interaction.edit_original_response(content=message)


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Answers(bot))
