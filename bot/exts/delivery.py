"""The loop that brings verdicts back to members.

It pays each finished verdict's XP (``bot.grading.outcomes``) and edits the
member's original response while its token lives; later it sends a DM, and if
DMs are closed, a message in the quest channel.  Every step is recorded in the
database, so a restart neither loses nor repeats a delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

import discord
from discord.ext import commands

from bot import clock
from bot.app import BrrrBot
from bot.grading import outcomes
from bot.presentation.verdicts import verdict_text

log = logging.getLogger(__name__)

DELIVERY_POLL_S = 0.1
#: don't start an edit with less token life than this left
TOKEN_MARGIN = timedelta(seconds=30)


class Delivery(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task[None] | None = None

    async def cog_load(self) -> None:
        self._loop_task = asyncio.create_task(self._deliver_forever(), name="verdict-delivery")

    async def cog_unload(self) -> None:
        if self._loop_task:
            self._loop_task.cancel()

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
    await bot.add_cog(Delivery(bot))
