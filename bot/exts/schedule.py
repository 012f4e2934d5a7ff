"""The loop that makes the daily quest post and the weekly leaderboard post, and the Discord
side of posting.

What is due, what a post shows, and the post log's claim, parts and release are
``bot.posting.posts``; this cog runs its pass as a ``bot.background.PassLoop`` every
``clock.RECHECK_S`` (and at once when a moderator changes the setup), and implements its
``PostTransport``: check the quest channel, render a post into messages, send one, open a
discussion thread.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import discord
from discord.ext import commands

from bot import clock
from bot.app import BrrrBot
from bot.background import PassLoop
from bot.posting.post_transport import DailyPost, PostFailed, SendRefused, ThreadRefused, WeeklyPost
from bot.posting.posts import Posting
from bot.presentation.board_embeds import weekly_post_embed
from bot.presentation.images import weekly_chart
from bot.presentation.limits import batch_embeds
from bot.presentation.page_links import page_links
from bot.presentation.quest_embeds import quest_embeds
from bot.presentation.roofline_charts import ROOFLINE_FILENAME, fastest_chart
from bot.presentation.roofline_image import roofline_png
from bot.presentation.speed_board_embeds import fastest_picture

log = logging.getLogger(__name__)

#: the weekly post's chart, attached to its message
IMAGE_NAME = "week.png"
#: Discord's error code when a message already has a thread
THREAD_ALREADY_EXISTS = 160004


@dataclass(frozen=True)
class Part:
    """One message of a post: its embeds and, for the weekly post, the pictures they show
    (file name, PNG)."""

    embeds: list[discord.Embed]
    images: tuple[tuple[str, bytes], ...] = ()


class Schedule(commands.Cog):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        self.posting = posting(bot)
        self.loop = PassLoop("scheduled-posts", self._pass, idle_s=clock.RECHECK_S)

    async def cog_load(self) -> None:
        self.loop.start(ready=self.bot.wait_until_ready)

    async def cog_unload(self) -> None:
        await self.loop.stop(grace_s=0)

    async def drain(self) -> None:
        """For a graceful stop: start no new pass and let a post in hand finish (the bot's
        drain time at most; a post cut off resumes after its sent parts)."""
        await self.loop.stop()

    def wake(self) -> None:
        self.loop.wake()

    async def _pass(self) -> None:
        await self.tick()

    async def tick(self) -> None:
        """One scheduled pass: post whatever is due."""
        await self.posting.post_due()


def posting(bot: BrrrBot) -> Posting[Part]:
    """The posting use case over this bot's services and Discord connection."""
    return Posting(bot.services, DiscordPosts(bot))


class DiscordPosts:
    """``bot.posting.post_transport.PostTransport`` over discord.py."""

    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot

    def in_server(self, guild_id: int) -> bool:
        return self.bot.get_guild(guild_id) is not None

    def check_channel(self, channel_id: int | None) -> None:
        self._channel(channel_id)

    def _channel(self, channel_id: int | None) -> discord.TextChannel:
        channel = self.bot.get_channel(channel_id or 0)
        if not isinstance(channel, discord.TextChannel):
            raise PostFailed("no quest channel is configured; a moderator can run /admin setup")
        perms = channel.permissions_for(channel.guild.me)
        missing = [
            what
            for what, ok in (
                ("View Channel", perms.view_channel),
                ("Send Messages", perms.send_messages),
                ("Embed Links", perms.embed_links),
                ("Attach Files", perms.attach_files),
            )
            if not ok
        ]
        if missing:
            raise PostFailed(f"I cannot post in #{channel.name}: missing {', '.join(missing)}")
        return channel

    async def daily_parts(self, post: DailyPost) -> Sequence[Part]:
        """The quest's embeds, batched to Discord's limits."""
        embeds = quest_embeds(
            post.quest,
            phase_title=post.phase_title,
            library=self.bot.services.content.library,
            heading=f"Quest of the day · {post.day.isoformat()}",
        )
        return [Part(batch) for batch in batch_embeds(embeds)]

    async def weekly_parts(self, post: WeeklyPost) -> Sequence[Part]:
        """One message: a bar chart of the top 10 and the week's highlights (with a link to the
        week's board on the web when the server's pages are public)."""
        discord_guild = self.bot.get_guild(post.guild_id)
        guild_name = discord_guild.name if discord_guild is not None else ""
        chart = await asyncio.to_thread(weekly_chart, post.highlights, guild_name=guild_name)
        links = page_links(self.bot.services.settings, await self.bot.services.guild(post.guild_id))
        embed = weekly_post_embed(
            post.week.key,
            post.highlights,
            post.champions,
            post.fastest_title,
            board_url=links.board("week") if links is not None else None,
        )
        embed.set_image(url=f"attachment://{IMAGE_NAME}")
        embeds, images = [embed], [(IMAGE_NAME, chart)]
        fastest = post.highlights.fastest
        picture = fastest_chart(fastest, post.fastest_title) if fastest is not None else None
        if fastest is not None and picture is not None:
            try:
                png = await asyncio.to_thread(roofline_png, picture)
            except Exception:  # the week's post goes out without the picture, not at all
                log.exception(
                    "week %s: the fastest result's roofline picture failed", post.week.key
                )
            else:
                shown = fastest_picture(fastest, title=post.fastest_title)
                shown.set_image(url=f"attachment://{ROOFLINE_FILENAME}")
                embeds.append(shown)
                images.append((ROOFLINE_FILENAME, png))
        return [Part(embeds, images=tuple(images))]

    async def send(self, channel_id: int, part: Part) -> int:
        """Send one message of a post (a fresh file object each time: a file sends once)."""
        channel = self._channel(channel_id)
        try:
            files = [discord.File(io.BytesIO(png), filename=name) for name, png in part.images]
            message = await channel.send(embeds=part.embeds, files=files)
        except discord.HTTPException as exc:
            raise SendRefused(str(exc)) from exc
        return message.id

    async def open_thread(self, channel_id: int, message_id: int, name: str, opener: str) -> int:
        channel = self._channel(channel_id)
        perms = channel.permissions_for(channel.guild.me)
        missing = [
            what
            for what, ok in (
                ("Create Public Threads", perms.create_public_threads),
                ("Send Messages in Threads", perms.send_messages_in_threads),
            )
            if not ok
        ]
        if missing:
            raise ThreadRefused(f"missing {', '.join(missing)} in #{channel.name}")
        try:
            thread = await channel.get_partial_message(message_id).create_thread(name=name)
        except discord.HTTPException as exc:
            if exc.code == THREAD_ALREADY_EXISTS:
                return message_id  # an earlier try opened it; a thread's id is its message's
            raise ThreadRefused(str(exc)) from exc
        try:
            await thread.send(opener)
        except discord.HTTPException as exc:
            log.warning(
                "guild %d: thread %d opened without its opener: %s",
                channel.guild.id,
                thread.id,
                exc,
            )
        return thread.id

    def roles_changed(self, guild_id: int) -> None:
        self.bot.dispatch("roles_changed", guild_id)


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Schedule(bot))
