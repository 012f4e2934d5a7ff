"""The loop that brings verdicts back to members, and the Discord side of sending them.

What is due, in which order, by which route and what a failure costs is decided in
``bot.delivery.outcomes``; this cog runs it as a ``bot.background.PassLoop`` and implements
its ``Transport``: edit the member's original response, send a DM, or post a short notice in
a channel.  A pass runs when a worker wrote a verdict (``services.verdicts``: the local pool's
pipe, and a NOTIFY on PostgreSQL) and every ``SAFETY_NET_S`` otherwise, for workers the bot
does not hear from (remote ones on SQLite), a notification lost with its connection, and
verdicts waiting for a retry.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Callable

import discord
from discord.ext import commands

from bot.app import BrrrBot
from bot.background import PassLoop
from bot.delivery import outcomes
from bot.delivery.transport import PendingVerdict, RouteRefused, Transport
from bot.presentation.roofline_charts import ROOFLINE_FILENAME, verdict_chart
from bot.presentation.roofline_image import roofline_png
from bot.presentation.verdicts import delivered_verdict, verdict_notice

log = logging.getLogger(__name__)

#: the slowest a verdict goes out when no wake came: two queries each time, idle or not
SAFETY_NET_S = 2.0


class Delivery(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        self.transport = GatedTransport(DiscordTransport(bot))
        self.loop = PassLoop("verdict-delivery", self._pass, idle_s=SAFETY_NET_S)
        self._unlisten: Callable[[], None] | None = None

    async def cog_load(self) -> None:
        self._unlisten = self.bot.services.verdicts.listen(self.loop.wake)
        self.loop.start(ready=self.bot.wait_until_ready)

    async def cog_unload(self) -> None:
        if self._unlisten is not None:
            self._unlisten()
        await self.loop.stop(grace_s=0)  # after ``drain``: what waits at the gate

    def wake(self) -> None:
        self.loop.wake()

    async def drain(self) -> None:
        """For a graceful stop: start no new send; return once the send in flight (if any)
        has completed and its delivery is recorded.  The caller then closes the bot, which
        cancels the pass where it waits (``GatedTransport``); a verdict not yet sent stays
        due in the database and goes out after the restart."""
        self.transport.close()
        stopped = asyncio.ensure_future(self.loop.stop())
        parked = asyncio.ensure_future(self.transport.parked.wait())
        try:
            await asyncio.wait({stopped, parked}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            parked.cancel()

    async def _pass(self) -> bool:
        result = await outcomes.deliver_pending(self.bot.services, self.transport)
        return result.more


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
        content, embed, files = await self._message(pending)
        assert pending.reply_token is not None
        webhook = discord.Webhook.partial(
            self.bot.application_id or 0, pending.reply_token, client=self.bot
        )
        try:
            await webhook.edit_message("@original", content=content, embed=embed, attachments=files)
        except discord.HTTPException as exc:
            raise RouteRefused(f"edit failed: {exc}") from exc

    async def send_dm(self, pending: PendingVerdict) -> None:
        content, embed, files = await self._message(pending)
        try:
            user = self.bot.get_user(pending.user_id) or await self.bot.fetch_user(pending.user_id)
            await user.send(content=content, embed=embed, files=files)
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

    async def _message(
        self, pending: PendingVerdict
    ) -> tuple[str, discord.Embed, list[discord.File]]:
        """The verdict's text and embed, and its roofline picture (drawn off the event loop)
        as the embed's image when the verdict has one."""
        title = await self._task_title(pending)
        content, embed = delivered_verdict(
            pending.verdict,
            task_title=title,
            award=pending.award,
            submission_id=pending.submission_id,
            task_ref=pending.task_ref,
        )
        chart = verdict_chart(pending.verdict, title)
        if chart is None:
            return content, embed, []
        try:
            png = await asyncio.to_thread(roofline_png, chart)
        except Exception:  # a picture is never worth the verdict: it goes without one
            log.exception("submission %d: the roofline picture failed", pending.submission_id)
            return content, embed, []
        embed.set_image(url=f"attachment://{ROOFLINE_FILENAME}")
        return content, embed, [discord.File(io.BytesIO(png), filename=ROOFLINE_FILENAME)]

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
