"""What delivering a verdict needs from Discord: a protocol the delivery cog implements.

``bot.delivery.outcomes`` decides where a verdict goes (the member's original reply while its
token lives, else a DM, else a short notice in a channel) and records what happened; a
transport performs one send and says whether that route took it.  So the routing and the
retry rules run, and are tested, without Discord.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from bot.progress.awards import Award
from graders.base import Verdict

#: how a verdict reached its member, as recorded in ``submissions.delivered_via``
Route = Literal["edit", "dm", "channel"]


class RouteRefused(Exception):
    """This route cannot take the message (the token expired, DMs are closed, no permission
    in the channel): the next route is tried.  Any other exception is a failed attempt."""


@dataclass(frozen=True)
class PendingVerdict:
    """Everything a transport needs to tell a member about one settled verdict."""

    submission_id: int
    guild_id: int
    user_id: int
    task_ref: str
    verdict: Verdict
    award: Award
    reply_token: str | None
    reply_expires_at: datetime | None
    reply_channel_id: int | None  # where the member ran /submit
    quest_channel_id: int | None  # the server's quest channel, if configured


class Transport(Protocol):
    async def edit_reply(self, pending: PendingVerdict) -> None:
        """Put the verdict into the member's original /submit reply."""
        ...

    async def send_dm(self, pending: PendingVerdict) -> None:
        """Send the verdict to the member by direct message."""
        ...

    async def post_notice(self, pending: PendingVerdict, channel_id: int) -> None:
        """Post the outcome line (never the feedback) in a channel, mentioning the member."""
        ...
