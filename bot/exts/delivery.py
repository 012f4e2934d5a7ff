"""The loop that brings verdicts back to members, and the Discord side of sending them.

What is due, in which order, by which route and what a failure costs is decided in
``bot.delivery.outcomes``; this cog runs it in a loop and implements its ``Transport``: edit
the member's original response, send a DM, or post a short notice in a channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import discord
from discord.ext import commands

from bot.app import BrrrBot
from bot.delivery import outcomes
from bot.delivery.transport import PendingVerdict, RouteRefused, Transport
from bot.presentation.verdicts import delivered_verdict, verdict_notice

log = logging.getLogger(__name__)

DELIVERY_POLL_S = 0.1
PASS_FAILED_PAUSE_S = 1.0  # after a pass failed as a whole (the database is away)


class Delivery(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        self.transport = GatedTransport(DiscordTransport(bot))
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task[None] | None = None

    async def cog_load(self) -> None:
        self._loop_task = asyncio.create_task(self._deliver_forever(), name="verdict-delivery")

    async def cog_unload(self) -> None:
        if self._loop_task:
            self._loop_task.cancel()

    def wake(self) -> None:
        self._wake.set()

    async def drain(self) -> None:
        """For a graceful stop: start no new send; return once the send in flight (if any)
        has completed and its delivery is recorded.  The caller then closes the bot, which
        cancels the pass where it waits (``GatedTransport``); a verdict not yet sent stays
        due in the database and goes out after the restart."""
        self.transport.close()
        self.wake()
        if self._loop_task is None or self._loop_task.done() or not self.bot.is_ready():
            return  # before ready the loop has sent nothing
        parked = asyncio.create_task(self.transport.parked.wait())
        try:
            await asyncio.wait({self._loop_task, parked}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            parked.cancel()

    async def _deliver_forever(self) -> None:
        await self.bot.wait_until_ready()
        while not self.transport.closed:
            try:
                await outcomes.deliver_pending(self.bot.services, self.transport)
            except Exception:
                log.exception("verdict delivery pass failed; retrying")
                await asyncio.sleep(PASS_FAILED_PAUSE_S)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), DELIVERY_POLL_S)


class GatedTransport:
    """A ``Transport`` that can be closed between sends: once closed, a send that has not
    started waits forever (sets ``parked``) instead of going out, so cancelling the pass there
    never falls between a send and the record of its delivery."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.closed = False
        self.parked = asyncio.Event()

    def close(self) -> None:
        self.closed = True

    async def _gate(self) -> None:
        if self.closed:
            self.parked.set()
            await asyncio.Event().wait()  # until the pass is cancelled

    async def edit_reply(self, pending: PendingVerdict) -> None:
        await self._gate()
        await self.inner.edit_reply(pending)

    async def send_dm(self, pending: PendingVerdict) -> None:
        await self._gate()
        await self.inner.send_dm(pending)

    async def post_notice(self, pending: PendingVerdict, channel_id: int) -> None:
        await self._gate()
        await self.inner.post_notice(pending, channel_id)


class DiscordTransport:
    """``bot.delivery.transport.Transport`` over discord.py; a route Discord refuses raises
    ``RouteRefused`` so the next one is tried."""

    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot

    async def edit_reply(self, pending: PendingVerdict) -> None:
        content, embed = await self._message(pending)
        assert pending.reply_token is not None
        webhook = discord.Webhook.partial(
            self.bot.application_id or 0, pending.reply_token, client=self.bot
        )
        try:
            await webhook.edit_message("@original", content=content, embed=embed)
        except discord.HTTPException as exc:
            raise RouteRefused(f"edit failed: {exc}") from exc

    async def send_dm(self, pending: PendingVerdict) -> None:
        content, embed = await self._message(pending)
        try:
            user = self.bot.get_user(pending.user_id) or await self.bot.fetch_user(pending.user_id)
            await user.send(content=content, embed=embed)
        except discord.HTTPException as exc:
            raise RouteRefused(f"DM failed: {exc}") from exc

    async def post_notice(self, pending: PendingVerdict, channel_id: int) -> None:
        channel = self.bot.get_channel(channel_id)
        if not isinstance(channel, discord.abc.Messageable):
            raise RouteRefused(f"channel {channel_id} is not one I can post in")
        content = verdict_notice(
            pending.verdict,
            task_title=await self._task_title(pending),
            award=pending.award,
            submission_id=pending.submission_id,
            user_id=pending.user_id,
        )
        try:
            await channel.send(
                content=content,
                allowed_mentions=discord.AllowedMentions(
                    everyone=False, roles=False, users=[discord.Object(pending.user_id)]
                ),
            )
        except discord.HTTPException as exc:
            raise RouteRefused(f"post in channel {channel_id} failed: {exc}") from exc

    async def _message(self, pending: PendingVerdict) -> tuple[str, discord.Embed]:
        return delivered_verdict(
            pending.verdict,
            task_title=await self._task_title(pending),
            award=pending.award,
            submission_id=pending.submission_id,
            task_ref=pending.task_ref,
        )

    async def _task_title(self, pending: PendingVerdict) -> str:
        try:
            _, task = (await self.bot.services.guild_map(pending.guild_id)).find_task(
                pending.task_ref
            )
        except KeyError:
            return pending.task_ref
        return task.title


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Delivery(bot))
