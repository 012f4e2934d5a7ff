"""What posting needs from Discord: a protocol the schedule cog implements.

``bot.posting.posts`` decides what is due, what a post shows and how its messages are claimed,
recorded and released; a transport checks the channel, renders a post into its messages
(parts), sends one message, opens a thread.  So the post log's rules run, and are tested,
without Discord.  What a post shows crosses as plain data (``DailyPost``, ``WeeklyPost``);
a part is whatever the transport renders and sends (for discord.py: embeds and an image).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Protocol, TypeVar

from bot.content import Quest
from bot.progress.champions import Champion
from bot.progress.highlights import WeeklyHighlights
from bot.progress.periods import Period

PartT = TypeVar("PartT")


class PostFailed(Exception):
    """The channel is missing or the bot may not post there; the message says which."""


class SendRefused(Exception):
    """Discord did not take a message (an HTTP error after discord.py's own retries): the
    post is given up for now, and its next try resumes after the parts already sent."""


class ThreadRefused(Exception):
    """The discussion thread could not be opened; the message says why.  The post stands."""


@dataclass(frozen=True)
class DailyPost:
    """A daily post: the quest of a server's local ``day``, under its phase's title."""

    guild_id: int
    day: date
    quest: Quest
    phase_title: str


@dataclass(frozen=True)
class WeeklyPost:
    """A weekly post: the week's highlights, its champions (crowned as the post was made;
    empty without a champion role) and the title of its fastest result's task (None when the
    map no longer has it)."""

    guild_id: int
    week: Period
    highlights: WeeklyHighlights
    champions: tuple[Champion, ...]
    fastest_title: str | None


class PostTransport(Protocol[PartT]):
    def in_server(self, guild_id: int) -> bool:
        """Whether the bot is still in this server (it posts nowhere else)."""
        ...

    def check_channel(self, channel_id: int | None) -> None:
        """Raise ``PostFailed`` saying what keeps the bot from posting there, if anything."""
        ...

    async def daily_parts(self, post: DailyPost) -> Sequence[PartT]:
        """The messages of a daily post, in order."""
        ...

    async def weekly_parts(self, post: WeeklyPost) -> Sequence[PartT]:
        """The messages of a weekly post, in order."""
        ...

    async def send(self, channel_id: int, part: PartT) -> int:
        """Send one message; its id.  Raises ``SendRefused`` when Discord does not take it."""
        ...

    async def open_thread(self, channel_id: int, message_id: int, name: str, opener: str) -> int:
        """Open a thread on a message and post ``opener`` in it; the thread's id.  Raises
        ``ThreadRefused`` when it cannot be opened (an opener that fails is only logged)."""
        ...

    def roles_changed(self, guild_id: int) -> None:
        """The server's champions changed: its role holders are due a check."""
        ...
