"""/submit and /submissions.

/submit acknowledges at once (deferred, ephemeral), downloads the file and hands it to the
``bot.intake.accept.submit`` use case, which validates and queues it; the reply is the
queue position, and the verdict comes back through ``bot.exts.delivery``.  ``download`` and
``queue_upload`` are shared with the "Submit solution" message command
(``bot.exts.message_submit``), so a submission is the same whichever way it came.  Intake
decides every rule (the cog asks it about the task and the file early, to answer before a
download); its ``Refused`` is answered by ``bot.exts.error_replies``.
"""

from __future__ import annotations

import logging

import discord
from discord import app_commands
from discord.ext import commands

from bot import clock
from bot.app import BrrrBot
from bot.db import presence
from bot.exts.common import UserFacingError, bot_of, display_name, guild_id_of, task_autocomplete
from bot.intake import accept
from bot.intake.history import recent_submissions
from bot.intake.submission_input import UploadLimits, check_upload
from bot.presentation.limits import truncate
from bot.presentation.verdicts import no_worker_text, queued_text
from bot.progress.members import ensure_member

log = logging.getLogger(__name__)


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
        guild_map = await self.bot.services.guild_map(guild_id_of(interaction))
        accept.find_build_task(guild_map, task)  # asked early: a wrong task is told first
        data = await download(file, UploadLimits.of(self.bot.services.settings))
        await queue_upload(interaction, task, file.filename, data)

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
            rows = await recent_submissions(session, member.id, task.strip() if task else None)
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


async def download(file: discord.Attachment, limits: UploadLimits) -> bytes:
    """Download at once (URLs expire), once intake has said yes to the file's name and size
    (``check_upload``: nothing is fetched that it would refuse)."""
    check_upload(file.filename, file.size, limits)
    try:
        return await file.read()
    except discord.HTTPException as exc:
        raise UserFacingError(
            f"I could not download `{truncate(file.filename, 80)}` ({exc.status}); "
            "please attach it again."
        ) from None


async def queue_upload(
    interaction: discord.Interaction, task_ref: str, filename: str, data: bytes
) -> None:
    """Queue ``data`` as a submission to the build task ``task_ref`` and edit the
    (acknowledged) response to say where it is in the queue; the verdict later replaces that
    response (``bot.exts.delivery``).

    ``/submit`` and the "Submit solution" message command both end here, so both get the same
    validation, limits, rate limits and verdict delivery: intake's, refused with ``Refused``.
    """
    bot = bot_of(interaction)
    settings = bot.services.settings
    guild_id = guild_id_of(interaction)
    queued = await accept.submit(
        bot.services.sessions,
        guild_id=guild_id,
        submitter=accept.Submitter(interaction.user.id, display_name(interaction.user)),
        guild_map=await bot.services.guild_map(guild_id),
        task_ref=task_ref,
        filename=filename,
        data=data,
        limits=UploadLimits.of(settings),
        hourly_limit=settings.submissions_per_hour,
        reply=accept.Reply(
            interaction.token, interaction.created_at, _notice_channel_id(interaction)
        ),
        now=clock.now,
    )
    log.info(
        "submission %d queued for %s (%s)",
        queued.submission_id,
        queued.task_ref,
        interaction.user,
    )
    lines = [queued_text(queued.position)]
    if not queued.worker_seen:
        lines.append(no_worker_text(queued.requirements.describe(), presence.RECENT_S))
    lines.append(f"Submission #{queued.submission_id} · `{queued.task_ref}`")
    await interaction.edit_original_response(content="\n".join(lines))


def _notice_channel_id(interaction: discord.Interaction) -> int | None:
    """Where a verdict's last-resort notice may go: never into a thread (the daily discussion
    threads are for talk, verdicts stay private), so a thread gives way to its channel."""
    if isinstance(interaction.channel, discord.Thread):
        return interaction.channel.parent_id
    return interaction.channel_id


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Submissions(bot))
