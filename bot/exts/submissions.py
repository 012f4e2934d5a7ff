"""/submit and /submissions, and the loop that brings verdicts back to members.

/submit acknowledges at once (deferred, ephemeral), validates and queues the
file, and answers with the queue position.  The delivery loop pays each
finished verdict's XP (``bot.grading.outcomes``) and edits the member's
original response while its token lives; later it sends a DM, and if DMs are
closed, a message in the quest channel.  Every step is recorded in the
database, so a restart neither loses nor repeats a delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

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
from bot.grading import heartbeat, outcomes
from bot.grading.capabilities import Requirements
from bot.grading.intake import IntakeRefused, Reply, queue_submission
from bot.grading.submission_input import SubmissionRejected, format_size, validate_submission
from bot.presentation.limits import truncate
from bot.presentation.verdicts import no_worker_text, queued_text, verdict_text
from bot.progress.members import ensure_member

log = logging.getLogger(__name__)

DELIVERY_POLL_S = 0.1
#: don't start an edit with less token life than this left
TOKEN_MARGIN = timedelta(seconds=30)
ALLOWED_EXTENSIONS = (".py", ".ipynb")


class Submissions(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task[None] | None = None

    async def cog_load(self) -> None:
        self._loop_task = asyncio.create_task(self._deliver_forever(), name="verdict-delivery")

    async def cog_unload(self) -> None:
        if self._loop_task:
            self._loop_task.cancel()

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

    # -- delivery ---------------------------------------------------------------------------

    def wake(self) -> None:
        self._wake.set()

    async def _deliver_forever(self) -> None:
        await self.bot.wait_until_ready()
        while True:
            try:
                await self.deliver_pending()
            except Exception:
                log.exception("verdict delivery failed; retrying")
                await asyncio.sleep(1)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), DELIVERY_POLL_S)

    async def deliver_pending(self) -> None:
        services = self.bot.services
        while True:
            async with services.reads() as session:
                pending = await outcomes.next_unsettled(session)
            if pending is None:
                break
            xp = await services.task_xp(pending.guild_id, pending.task_ref)
            async with services.sessions() as session, session.begin():
                await outcomes.settle(session, pending.submission_id, xp, clock.now())
        async with services.reads() as session:
            pending = await outcomes.undelivered(session)
        for outcome in pending:
            via = await self._deliver(outcome)
            async with services.sessions() as session, session.begin():
                await outcomes.mark_delivered(session, outcome.submission_id, via, clock.now())

    async def _deliver(self, outcome: outcomes.Outcome) -> str:
        title = await self._task_title(outcome.guild_id, outcome.task_ref)
        award = outcome.award
        level_up = None
        if award.get("new_level", 0) > award.get("old_level", 0):
            level_up = (award["old_level"], award["new_level"])
        content, embed = verdict_text(
            outcome.verdict,
            task_title=title,
            xp_added=award.get("xp_added", 0),
            level_up=level_up,
            streak_bonus=award.get("streak_bonus", 0),
        )
        content = f"{content}\nSubmission #{outcome.submission_id} · `{outcome.task_ref}`"
        expires = outcome.reply_expires_at
        if outcome.reply_token and expires and expires - clock.now() > TOKEN_MARGIN:
            try:
                webhook = discord.Webhook.partial(
                    self.bot.application_id or 0, outcome.reply_token, client=self.bot
                )
                await webhook.edit_message("@original", content=content, embed=embed)
                return "edit"
            except discord.HTTPException as exc:
                log.info("submission %d: edit failed (%s)", outcome.submission_id, exc)
        try:
            user = self.bot.get_user(outcome.user_id) or await self.bot.fetch_user(outcome.user_id)
            await user.send(content=content, embed=embed)
            return "dm"
        except discord.HTTPException as exc:
            log.info("submission %d: DM failed (%s)", outcome.submission_id, exc)
        return await self._post_in_channel(outcome, content)

    async def _post_in_channel(self, outcome: outcomes.Outcome, content: str) -> str:
        """Last resort when DMs are closed: the outcome line only, never the feedback, which
        can quote the member's code."""
        outcome_line = content.splitlines()[0]
        content = (
            f"{outcome_line} (submission #{outcome.submission_id}). Your DMs are closed, so the "
            "details are in `/submissions`."
        )
        guild = await self.bot.services.guild(outcome.guild_id)
        for channel_id in (guild.quest_channel_id if guild else None, outcome.reply_channel_id):
            channel = self.bot.get_channel(channel_id) if channel_id else None
            if not isinstance(channel, discord.abc.Messageable):
                continue
            try:
                await channel.send(
                    content=f"<@{outcome.user_id}> {content}",
                    allowed_mentions=discord.AllowedMentions(
                        everyone=False, roles=False, users=[discord.Object(outcome.user_id)]
                    ),
                )
                return "channel"
            except discord.HTTPException as exc:
                log.warning("submission %d: channel post failed (%s)", outcome.submission_id, exc)
        log.error("submission %d: verdict could not be delivered anywhere", outcome.submission_id)
        return "undeliverable"

    async def _task_title(self, guild_id: int, task_ref: str) -> str:
        try:
            _, task = (await self.bot.services.guild_map(guild_id)).find_task(task_ref)
        except KeyError:
            return task_ref
        return task.title


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Submissions(bot))
