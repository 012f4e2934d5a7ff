"""/submit and /submissions.

/submit acknowledges at once (deferred, ephemeral), validates and queues the
file, and answers with the queue position; the verdict comes back through
``bot.exts.delivery``.
"""

from __future__ import annotations

import logging

import discord
from discord import app_commands
from discord.ext import commands
from sqlalchemy import select

from bot import clock
from bot.app import BrrrBot
from bot.content import BuildTask
from bot.content.hashing import version_hash
from bot.db.models import Submission
from bot.exts.common import (
    UserFacingError,
    display_name,
    find_task,
    guild_id_of,
    task_autocomplete,
)
from bot.grading import heartbeat
from bot.grading.capabilities import Requirements
from bot.grading.intake import IntakeRefused, Reply, queue_submission
from bot.grading.submission_input import SubmissionRejected, format_size, validate_submission
from bot.presentation.limits import truncate
from bot.presentation.verdicts import no_worker_text, queued_text
from bot.progress.members import ensure_member

log = logging.getLogger(__name__)

ALLOWED_EXTENSIONS = (".py", ".ipynb")


class Submissions(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot

    @app_commands.command(name="submit", description="Submit a .py or .ipynb file for a build task")
    @app_commands.describe(task="the build task", file="your solution, .py or .ipynb")
    @app_commands.autocomplete(task=task_autocomplete({"build"}))
    @app_commands.guild_only()
    async def submit(
        self, interaction: discord.Interaction, task: str, file: discord.Attachment
    ) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        guild_id = guild_id_of(interaction)
        _, quest, found = await find_task(interaction, task, {"build"})
        assert isinstance(found, BuildTask)
        data = await self._download(file)
        try:
            prepared = validate_submission(file.filename, data, **self.bot.services.upload_limits())
        except SubmissionRejected as exc:
            raise UserFacingError(f"`{truncate(file.filename, 80)}`: {exc}") from None
        ref = f"{quest.id}/{found.id}"
        try:
            async with self.bot.services.sessions() as session, session.begin():
                member = await ensure_member(
                    session, guild_id, interaction.user.id, display_name(interaction.user)
                )
                # read the clock only now that this transaction holds the write lock, so the
                # recorded time is when the checks ran: never before the previous verdict
                now = clock.now()
                queued = await queue_submission(
                    session,
                    guild_id=guild_id,
                    member_id=member.id,
                    task_ref=ref,
                    quest_version=version_hash(quest),
                    filename=file.filename[:255],
                    data=data,
                    prepared=prepared,
                    requirements=Requirements.of(found),
                    hourly_limit=self.bot.services.settings.submissions_per_hour,
                    reply=Reply(interaction.token, interaction.created_at, interaction.channel_id),
                    now=now,
                )
        except IntakeRefused as exc:
            raise UserFacingError(str(exc)) from None
        log.info("submission %d queued for %s (%s)", queued.submission_id, ref, interaction.user)
        lines = [queued_text(queued.position)]
        if not queued.worker_seen:
            needed = Requirements.of(found).describe()
            lines.append(no_worker_text(needed, heartbeat.RECENT_S))
        lines.append(f"Submission #{queued.submission_id} · `{ref}`")
        await interaction.edit_original_response(content="\n".join(lines))

    async def _download(self, file: discord.Attachment) -> bytes:
        """Check what we can before downloading; download at once (URLs expire)."""
        name = file.filename.lower()
        if not name.endswith(ALLOWED_EXTENSIONS):
            raise UserFacingError(
                f"`{truncate(file.filename, 80)}` is not a .py or .ipynb file; attach your "
                "solution as a Python file or a Jupyter notebook."
            )
        limits = self.bot.services.upload_limits()
        cap = limits["max_ipynb_bytes"] if name.endswith(".ipynb") else limits["max_py_bytes"]
        if file.size > cap:
            raise UserFacingError(
                f"`{truncate(file.filename, 80)}` is {format_size(file.size)}; the limit is "
                f"{format_size(cap)}."
            )
        try:
            return await file.read()
        except discord.HTTPException as exc:
            raise UserFacingError(
                f"I could not download `{truncate(file.filename, 80)}` ({exc.status}); "
                "please attach it again."
            ) from None

    @app_commands.command(name="submissions", description="Your recent submissions and verdicts")
    @app_commands.describe(task="only this task")
    @app_commands.autocomplete(task=task_autocomplete({"build"}))
    @app_commands.guild_only()
    async def submissions(self, interaction: discord.Interaction, task: str | None = None) -> None:
        guild_id = guild_id_of(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        async with self.bot.services.sessions() as session:
            member = await ensure_member(
                session, guild_id, interaction.user.id, display_name(interaction.user)
            )
            await session.commit()
            query = (
                select(Submission)
                .where(Submission.member_id == member.id)
                .order_by(Submission.id.desc())
                .limit(10)
            )
            if task:
                query = query.where(Submission.task_ref == task.strip())
            rows = (await session.execute(query)).scalars().all()
        if not rows:
            await interaction.edit_original_response(
                content="You have no submissions yet. Try `/submit`."
            )
            return
        lines = [
            f"#{s.id} · `{s.task_ref}` · {s.status}"
            + (f" · score {s.score:.2f}" if s.score is not None else "")
            + f" · <t:{int(s.created_at.timestamp())}:R>"
            for s in rows
        ]
        embed = discord.Embed(title="Your recent submissions", description="\n".join(lines))
        await interaction.edit_original_response(embed=embed)


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Submissions(bot))
