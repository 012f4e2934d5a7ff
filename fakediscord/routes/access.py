"""What the bot may see and do in a channel, checked the way Discord checks it."""

from __future__ import annotations

from aiohttp import web

from fakediscord import errors
from fakediscord.context import Context
from fakediscord.entities import Channel
from fakediscord.permissions import Permission


def visible_channel(ctx: Context, request: web.Request) -> Channel:
    """The request's channel; 50001 Missing Access when the bot cannot see it."""
    channel = ctx.world.channel(request.match_info["channel_id"])
    if not ctx.world.permissions_in(channel, ctx.world.bot) & Permission.VIEW_CHANNEL:
        raise errors.missing_access()
    return channel


def require(ctx: Context, channel: Channel, permission: Permission) -> None:
    if not ctx.world.permissions_in(channel, ctx.world.bot) & permission:
        raise errors.missing_permissions()
